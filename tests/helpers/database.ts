import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { migrate } from "../../lib/db/migrate";

export type TestDatabase = { url: string; name: string; drop: () => Promise<void> };

/** A new, empty database of its own for one test file, on the test server. */
export async function createEmptyDatabase(prefix = "test"): Promise<TestDatabase> {
  const serverUrl = inject("databaseServerUrl");
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  await withServerClient(serverUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => withServerClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}

/** A new database with every migration applied. */
export async function createMigratedDatabase(prefix = "test"): Promise<TestDatabase> {
  const database = await createEmptyDatabase(prefix);
  await migrate(database.url);
  return database;
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
