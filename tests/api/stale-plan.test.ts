import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;
beforeAll(async () => {
  env = await createTestEnvironment("stale_plan");
  // One connection, so the request after the migration meets the statement prepared before it.
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { DATABASE_POOL_SIZE: "1" },
  });
});
afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

describe("the API's prepared statements", () => {
  it("survive a migration that changes a column they return, under the running server", async () => {
    const account = await buyer("stale-plan");
    await order(account.id, { name: "Before" });
    const { secret } = await apiKey(account.id);
    const list = () => fetch(`${server.url}/api/v1/orders`, { headers: { Authorization: `Bearer ${secret}` } });
    expect((await list()).status).toBe(200);

    const client = new pg.Client({ connectionString: env.database.url });
    await client.connect();
    // Both statements return a column whose type changes: their cached plans are now stale.
    await client.query(`ALTER TABLE api_keys ALTER COLUMN secret_hash TYPE text`);
    await client.query(`ALTER TABLE orders ALTER COLUMN name TYPE varchar(500)`);
    await client.end();

    const after = await list();
    expect(after.status).toBe(200);
    expect((await after.json()).data.map((o: { name: string }) => o.name)).toEqual(["Before"]);
  });
});
