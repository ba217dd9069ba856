import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { openEmbeddedDatabase } from "../../lib/db/embedded";
import { embeddedDatabaseSettings } from "../../lib/db/config";
import { migrate } from "../../lib/db/migrate";

/** Shared by the integration tests (vitest) and the end-to-end tests (Playwright). */

export type TestDatabase = { url: string; name: string; drop: () => Promise<void> };

/**
 * The PostgreSQL server tests create their databases on. With DATABASE_URL set, that server, and
 * the run fails (never skips) when it is unreachable. Without it, as on a fresh machine, an
 * embedded PostgreSQL of the tests' own.
 */
export async function openTestDatabaseServer(): Promise<{ url: string; stop: () => Promise<void> }> {
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
    return { url: configured, stop: async () => {} };
  }
  const embedded = await openEmbeddedDatabase({
    ...embeddedDatabaseSettings(),
    dataDir: path.resolve(process.env.TEST_EMBEDDED_PG_DIR ?? path.join(os.tmpdir(), "dataset-access-test-postgres")),
    port: Number(process.env.TEST_EMBEDDED_PG_PORT ?? 54330),
  });
  return { url: embedded.url, stop: () => embedded.stop() };
}

/**
 * Tests talk to the production server, so it is built from the current sources first
 * (TEST_SKIP_BUILD=1 reuses .next when you know it is fresh).
 */
export function buildProductionServer(): void {
  if (process.env.TEST_SKIP_BUILD === "1") return;
  const run = (args: string[]) =>
    execFileSync(process.execPath, args, {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
    });
  // What `npm run build` does: the app, then the client tarball it serves.
  run([path.resolve("node_modules/next/dist/bin/next"), "build"]);
  run(["--import", "tsx", path.resolve("scripts/clients/pack-typescript.ts")]);
}

/**
 * A new database of its own on the test server, empty or with every migration applied; with
 * `template` (a migrated database nobody is connected to, createMigratedTemplate), a copy of it:
 * PostgreSQL copies the files in a fraction of the time the 17 migrations take to run.
 */
export async function createDatabase(
  serverUrl: string,
  prefix: string,
  { migrated, template }: { migrated: boolean; template?: string },
): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const copied = migrated && template !== undefined;
  await withServerClient(serverUrl, (client) =>
    copied ? createFromTemplate(client, name, template) : client.query(`CREATE DATABASE "${name}"`),
  );
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const database = {
    url: url.toString(),
    name,
    drop: () => withServerClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
  if (migrated && !copied) await migrate(database.url);
  return database;
}

/** A migrated database for createDatabase to copy (one per test run; `drop` when the run ends). */
export async function createMigratedTemplate(serverUrl: string): Promise<TestDatabase> {
  return createDatabase(serverUrl, "test_template", { migrated: true });
}

/** PostgreSQL's "source database is being accessed by other users": the migrating session still ending. */
const OBJECT_IN_USE = "55006";

async function createFromTemplate(client: pg.Client, name: string, template: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== OBJECT_IN_USE || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function withServerClient(serverUrl: string, run: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const url = new URL(serverUrl);
  url.pathname = "/postgres";
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}
