import { afterAll, beforeAll, expect, it } from "vitest";
import { poolQuery, sqlQuery } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import type { TestEnvironment } from "../helpers/fixtures";

/** poolQuery runs other libraries' SQL (pg-boss) on the app's pool: a failure must not poison the pool. */
let env: TestEnvironment;
beforeAll(async () => {
  process.env.DATABASE_POOL_SIZE = "1"; // one connection: the next query gets the very one that failed
  env = await createTestEnvironment("pool_query");
});
afterAll(async () => {
  delete process.env.DATABASE_POOL_SIZE;
  await env?.cleanup();
});

it("closes a connection whose script failed inside a transaction, so the next query works", async () => {
  await expect(poolQuery("BEGIN; SELECT 1 / 0; COMMIT;")).rejects.toThrow(/division by zero/);
  expect(await sqlQuery<{ one: number }>("SELECT 1 AS one", [])).toEqual([{ one: 1 }]);
});
