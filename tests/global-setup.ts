import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openEmbeddedDatabase } from "../lib/db/embedded";
import { embeddedDatabaseSettings } from "../lib/db/config";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL server on which tests create their own databases. */
    databaseServerUrl: string;
  }
}

/**
 * With DATABASE_URL set, tests use that server and fail (never skip) when it is unreachable.
 * Without it, as on a fresh machine, they get an embedded PostgreSQL of their own.
 */
export default async function setup(project: TestProject) {
  buildProductionServer();
  const configured = process.env.DATABASE_URL;
  if (configured) {
    const client = new pg.Client({ connectionString: configured, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
    } catch (error) {
      throw new Error(`DATABASE_URL is set but its server is unreachable (${(error as Error).message}).`);
    } finally {
      await client.end().catch(() => {});
    }
    project.provide("databaseServerUrl", configured);
    return;
  }
  const embedded = await openEmbeddedDatabase({
    ...embeddedDatabaseSettings(),
    dataDir: path.resolve(process.env.TEST_EMBEDDED_PG_DIR ?? path.join(os.tmpdir(), "dataset-access-test-postgres")),
    port: Number(process.env.TEST_EMBEDDED_PG_PORT ?? 54330),
  });
  project.provide("databaseServerUrl", embedded.url);
  return () => embedded.stop();
}

/**
 * Integration tests talk to the production server, so it is built from the current sources
 * first (TEST_SKIP_BUILD=1 reuses .next when you know it is fresh).
 */
function buildProductionServer(): void {
  if (process.env.TEST_SKIP_BUILD === "1") return;
  execFileSync(process.execPath, [path.resolve("node_modules/next/dist/bin/next"), "build"], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
  });
}
