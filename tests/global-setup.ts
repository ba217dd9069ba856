import { execFileSync } from "node:child_process";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { buildProductionServer, createMigratedTemplate, openTestDatabaseServer } from "./helpers/database-server";
import { buildTypeScriptClient } from "./clients/cli";
import { startTestS3 } from "./helpers/s3";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL server on which tests create their own databases. */
    databaseServerUrl: string;
    /** A migrated database on that server, copied for each test file's database (createMigratedDatabase). */
    migratedTemplate: string;
    /** This run's directory of log files, one per test file (tests/helpers/test-log.ts). */
    testLogDir: string;
    /** With STORAGE_DRIVER=s3 and no S3_ENDPOINT: the settings of the tests' own S3-compatible store. */
    storageEnv: Record<string, string>;
  }
}

export default async function setup(project: TestProject) {
  const logDir = path.resolve("test-results/logs", new Date().toISOString().replace(/[:.]/g, "-"));
  project.provide("testLogDir", logDir);
  // A skip says why, once at the start and in the skipped tests' titles (tests/helpers/rate-limit.ts needingRedis).
  if (!process.env.REDIS_URL) {
    console.log(
      "REDIS_URL is not set: the tests that need Redis are skipped, titled (skipped: needs REDIS_URL). " +
        "Set it to run them; an unreachable Redis then fails them.",
    );
  }
  if (process.getuid?.() !== 0) console.log("Not root: the one test that needs root is skipped (skipped: needs root).");
  buildProductionServer();
  // The CLI tests run the built operator CLI, as `npm run admin` does; built here once, not by each test file.
  execFileSync(process.execPath, ["scripts/cli-build.mjs", "--if-stale"], { stdio: "inherit" });
  // The `dataset-access` command the client tests run, compiled once here, not by each of them.
  await buildTypeScriptClient();
  const server = await openTestDatabaseServer();
  project.provide("databaseServerUrl", server.url);
  const template = await createMigratedTemplate(server.url);
  project.provide("migratedTemplate", template.name);
  // STORAGE_DRIVER=s3 runs the tests against object storage: the given S3_* settings, else a store of their own.
  const s3 = process.env.STORAGE_DRIVER === "s3" && !process.env.S3_ENDPOINT ? await startTestS3() : undefined;
  project.provide("storageEnv", s3?.env ?? {});
  return async () => {
    console.log(`Logs of this run (printed above only for failed tests): ${logDir}`);
    await template.drop();
    await server.stop();
    await s3?.stop();
  };
}
