import { afterAll, beforeAll, expect, it } from "vitest";
import { HISTORY_LENGTH, pastQuery, queryHistory, recordQuery } from "../../lib/explore/history";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";

/**
 * The Query page's history on a real PostgreSQL: the newest 20 queries per buyer, across their
 * orders, never another buyer's, and nothing recorded against an order that is not the buyer's.
 */
let env: TestEnvironment;

beforeAll(async () => {
  env = await createTestEnvironment("query_history");
});

afterAll(async () => {
  await env?.cleanup();
});

it("keeps the newest 20 of each buyer, newest first, with each order's name and outcome", async () => {
  const alice = await buyer("history-alice");
  const bob = await buyer("history-bob");
  const [first, second] = [
    await order(alice.id, { name: "Alice first" }),
    await order(alice.id, { name: "Alice second" }),
  ];
  const bobs = await order(bob.id, { name: "Bob's" });
  await recordQuery(bob.id, bobs.id, { sql: "SELECT 'bob'", rows: 1, error: null });
  for (let index = 1; index <= HISTORY_LENGTH + 5; index++) {
    const failed = index % 5 === 0;
    await recordQuery(alice.id, index % 2 ? first.id : second.id, {
      sql: `SELECT ${index}`,
      rows: failed ? null : index,
      error: failed ? "Only one SELECT may run." : null,
    });
  }
  const history = await queryHistory(alice.id);
  expect(history.map((entry) => entry.sql)).toEqual(
    Array.from({ length: HISTORY_LENGTH }, (_, at) => `SELECT ${HISTORY_LENGTH + 5 - at}`),
  );
  expect(history[0]).toMatchObject({ orderId: first.id, orderName: "Alice first", rows: null, error: /SELECT/ });
  expect(history[1]).toMatchObject({ orderId: second.id, orderName: "Alice second", rows: 24 });
  expect(history[5]).toMatchObject({ sql: "SELECT 20", rows: null, error: "Only one SELECT may run." });
  // Trimming one buyer's history leaves another's alone.
  expect((await queryHistory(bob.id)).map((entry) => entry.sql)).toEqual(["SELECT 'bob'"]);
});

it("records nothing against another buyer's order and opens only the buyer's own past queries", async () => {
  const owner = await buyer("history-owner");
  const stranger = await buyer("history-stranger");
  const owned = await order(owner.id, { name: "Owned" });
  await recordQuery(stranger.id, owned.id, { sql: "SELECT 'not mine'", rows: 0, error: null });
  expect(await queryHistory(stranger.id)).toEqual([]);
  expect(await queryHistory(owner.id)).toEqual([]);

  await recordQuery(owner.id, owned.id, { sql: "SELECT 'mine'", rows: 1, error: null });
  const [entry] = await queryHistory(owner.id);
  expect(await pastQuery(owner.id, entry!.id)).toEqual({ orderId: owned.id, sql: "SELECT 'mine'" });
  for (const [who, id] of [
    [stranger.id, entry!.id],
    [owner.id, "qry_0123"],
    [owner.id, entry!.id.replace("qry_", "ord_")],
  ] as const) {
    expect(await pastQuery(who, id), `${who} ${id}`).toBeUndefined();
  }
});
