import pg from "pg";
import { inject } from "vitest";
import { createDatabase, type TestDatabase } from "./database-server";
import { prepareTestEnvironment, type TestEnvironment } from "./fixtures";

export type { TestDatabase } from "./database-server";

/** A new, empty database of its own for one test file, on the test server. */
export function createEmptyDatabase(prefix = "test"): Promise<TestDatabase> {
  return createDatabase(inject("databaseServerUrl"), prefix, { migrated: false });
}

/** A new database with every migration applied. */
export function createMigratedDatabase(prefix = "test"): Promise<TestDatabase> {
  return createDatabase(inject("databaseServerUrl"), prefix, { migrated: true, template: inject("migratedTemplate") });
}

/** A migrated database and a storage directory, used by this test process and the server under test. */
export async function createTestEnvironment(prefix: string): Promise<TestEnvironment> {
  // The storage the run was started with (STORAGE_DRIVER=s3: the tests' S3 store), for this process and its servers.
  Object.assign(process.env, inject("storageEnv"));
  return prepareTestEnvironment(await createMigratedDatabase(prefix), prefix);
}

/** A table lock held open; `release` commits it and closes its connection (once, however often called). */
export type TableLock = { release: () => Promise<void> };

/** Holds an ACCESS EXCLUSIVE lock on `table`, as a migration does, in a transaction on a connection of its own. */
export async function lockTable(databaseUrl: string, table: string): Promise<TableLock> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("BEGIN");
    await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  } catch (error) {
    await client.end();
    throw error;
  }
  let released: Promise<void> | undefined;
  return { release: () => (released ??= client.query("COMMIT").then(() => client.end())) };
}
