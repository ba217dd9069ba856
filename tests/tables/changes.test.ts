import { createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { driverOf, localStorage } from "../../lib/storage";
import { readS3Object } from "../../lib/storage/s3";
import { publishTable } from "../../lib/tables/publish";
import { versionJson } from "../../lib/tables/queries";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { Webhook } from "standardwebhooks";
import { startReceiver } from "../webhooks/receiver";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { publicationDone, withoutQualityChecks } from "./helpers";

/**
 * Every version's change file (contract Part 4, "Change feed") against a diff computed here, in the
 * test, from the rows it published (never by the code under test): generated pairs of versions,
 * keyed and keyless, with nulls, an added column, duplicate rows, NaN, a version identical to the
 * previous and one where every row changed, on the production server's worker and the storage
 * driver the run uses.
 */

type Row = Record<string, string | number | null>;

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;

beforeAll(async () => {
  env = await createTestEnvironment("changes");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "changes-"));
  orderId = (await order((await buyer("changes")).id)).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    // Its worker delivers the table.updated test's webhooks to a receiver on loopback.
    env: {
      REDIS_URL: "",
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_ALLOW_INSECURE: "true",
    },
  });
  // Endpoints are made here as the server takes them: secrets sealed alike, loopback allowed.
  Object.assign(process.env, {
    AUTH_SECRET: TEST_AUTH_SECRET,
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

/** Rows as JSON Lines (types kept: numbers, text, null, NaN as the JSON Lines reader takes it). */
const jsonl = (rows: Row[]) => rows.map((row) => JSON.stringify(row)).join("\n") + "\n";

let counter = 0;
async function version(table: string, rows: Row[], options: { mode?: "snapshot" | "append"; key?: string[] } = {}) {
  const published = await publishTable({
    orderId,
    table,
    ...options,
    parts: [{ name: `${table}-${++counter}.jsonl`, source: { stream: Readable.from([Buffer.from(jsonl(rows))]) } }],
  });
  const done = await publicationDone(published.publication, 240_000);
  expect(done).toMatchObject({ status: "ready", error: null });
  // Change files are tested here, not the gate: the versions after the first change as much as they like.
  if (done.version === 1) await withoutQualityChecks(orderId, table);
  return done.version!;
}

/** The change file of a version, read with DuckDB: its rows (canonical JSON) and its counts. */
async function changeFile(table: string, versionNumber: number) {
  const row = await db().tableVersion.findFirstOrThrow({
    where: { table: { orderId, name: table }, version: versionNumber },
    select: { changes: true, changeFileId: true },
  });
  const file = await db().orderFile.findUniqueOrThrow({
    where: { id: row.changeFileId! },
    select: { storageKey: true },
  });
  let local = path.join(workDir, `read-${table}-${versionNumber}.parquet`);
  if (driverOf(file.storageKey) === "s3")
    await pipeline((await readS3Object(file.storageKey)).body, createWriteStream(local));
  else local = localStorage().pathOf(file.storageKey);
  const connection = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    const result = await connection.runAndReadAll(`SELECT * FROM read_parquet('${local}')`);
    return { rows: result.getRowObjectsJson().map(canonical), changes: row.changes };
  } finally {
    connection.closeSync();
  }
}

/** One row as comparable text: keys sorted, numbers as numbers (DuckDB gives big integers as text). */
function canonical(row: Record<string, unknown>): string {
  const sorted = Object.keys(row)
    .sort()
    .map((key) => {
      const value = row[key];
      const numeric = typeof value === "string" && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
      return [key, typeof numeric === "number" && Number.isNaN(numeric) ? "NaN" : numeric];
    });
  return JSON.stringify(Object.fromEntries(sorted));
}

/** The change rows expected between two versions, computed here: keyed by `key`, or as a multiset of whole rows. */
function expectedChanges(previous: Row[] | null, current: Row[], columns: string[], key: string[] | null): string[] {
  const shaped = (row: Row) => Object.fromEntries(columns.map((column) => [column, row[column] ?? null]));
  const tagged = (row: Row, type: string) => canonical({ ...shaped(row), _change_type: type });
  if (!previous) return current.map((row) => tagged(row, "insert"));
  if (key) {
    const keyOf = (row: Row) => JSON.stringify(key.map((column) => row[column]));
    const before = new Map(previous.map((row) => [keyOf(row), row]));
    const after = new Map(current.map((row) => [keyOf(row), row]));
    const changes: string[] = [];
    for (const [id, row] of after) {
      const old = before.get(id);
      if (!old) changes.push(tagged(row, "insert"));
      else if (canonical(shaped(old)) !== canonical(shaped(row))) {
        changes.push(tagged(old, "update_preimage"), tagged(row, "update_postimage"));
      }
    }
    for (const [id, row] of before) if (!after.has(id)) changes.push(tagged(row, "delete"));
    return changes;
  }
  const count = (rows: Row[]) => {
    const counts = new Map<string, { row: Row; n: number }>();
    for (const row of rows) {
      const text = canonical(shaped(row));
      counts.set(text, { row, n: (counts.get(text)?.n ?? 0) + 1 });
    }
    return counts;
  };
  const [before, after] = [count(previous), count(current)];
  const changes: string[] = [];
  for (const [text, { row, n }] of after)
    for (let i = n - (before.get(text)?.n ?? 0); i > 0; i--) changes.push(tagged(row, "insert"));
  for (const [text, { row, n }] of before)
    for (let i = n - (after.get(text)?.n ?? 0); i > 0; i--) changes.push(tagged(row, "delete"));
  return changes;
}

/**
 * Change rows in the order the change file keeps (contract Part 4, ordered for the preview): by
 * `column`, each update_preimage just before its update_postimage.
 */
function inKeyOrder(changes: string[], column: string): string[] {
  const rank = (type: unknown) => (type === "update_postimage" ? 1 : 0);
  const parsed = changes.map((text) => ({ text, row: JSON.parse(text) as Record<string, unknown> }));
  parsed.sort(
    (a, b) => Number(a.row[column]) - Number(b.row[column]) || rank(a.row._change_type) - rank(b.row._change_type),
  );
  return parsed.map(({ text }) => text);
}

const tally = (changes: string[]) => ({
  inserted: changes.filter((change) => change.includes('"_change_type":"insert"')).length,
  updated: changes.filter((change) => change.includes('"_change_type":"update_postimage"')).length,
  deleted: changes.filter((change) => change.includes('"_change_type":"delete"')).length,
});

/** A small seeded generator, so a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("a keyed snapshot's change files", { timeout: 300_000 }, () => {
  it("match a diff on the key computed here: inserts, deletes, update pairs, nulls as values, an added column", async () => {
    const random = seeded(20261125);
    const v1: Row[] = Array.from({ length: 300 }, (_, i) => ({
      id: i + 1,
      name: `item ${i + 1}`,
      price: random() < 0.1 ? null : Math.round(random() * 10_000) / 100,
    }));
    const v2: Row[] = [];
    for (const row of v1) {
      const roll = random();
      if (roll < 0.1) continue; // deleted
      const stock = random() < 0.5 ? null : Math.floor(random() * 50);
      if (roll < 0.25)
        v2.push({ ...row, price: row.price === null ? 1 : random() < 0.3 ? null : Number(row.price) + 1, stock });
      else v2.push({ ...row, stock: roll < 0.6 ? null : stock });
    }
    for (let id = 301; id <= 330; id++) v2.push({ id, name: `new ${id}`, price: id, stock: 3 });

    expect(await version("keyed", v1, { key: ["id"] })).toBe(1);
    expect(await version("keyed", v2)).toBe(2);

    const first = await changeFile("keyed", 1);
    const expectedFirst = expectedChanges(null, v1, ["id", "name", "price"], ["id"]);
    expect(first.rows).toEqual(inKeyOrder(expectedFirst, "id"));
    expect(first.changes).toEqual({ inserted: 300, updated: 0, deleted: 0 });

    const second = await changeFile("keyed", 2);
    const expectedSecond = expectedChanges(v1, v2, ["id", "name", "price", "stock"], ["id"]);
    // In key order with each pre-image beside its post-image: the file's first rows show whole changes.
    expect(second.rows).toEqual(inKeyOrder(expectedSecond, "id"));
    expect(second.changes).toEqual(tally(expectedSecond));
    expect(tally(expectedSecond).updated).toBeGreaterThan(10);
  });

  it("has no rows for a version identical to the previous one, and counts zero: still a version", async () => {
    const rows: Row[] = [
      { id: 1, name: "a", price: 1.5 },
      { id: 2, name: "b", price: null },
    ];
    await version("same", rows, { key: ["id"] });
    expect(await version("same", rows)).toBe(2);
    expect(await changeFile("same", 2)).toEqual({ rows: [], changes: { inserted: 0, updated: 0, deleted: 0 } });
  });

  it("pairs every row when every row changed", async () => {
    const before: Row[] = Array.from({ length: 50 }, (_, i) => ({ id: i, name: "x", price: i }));
    const after = before.map((row) => ({ ...row, name: "y" }));
    await version("all_changed", before, { key: ["id"] });
    await version("all_changed", after);
    const { rows, changes } = await changeFile("all_changed", 2);
    expect(changes).toEqual({ inserted: 0, updated: 50, deleted: 0 });
    expect(rows).toEqual(inKeyOrder(expectedChanges(before, after, ["id", "name", "price"], ["id"]), "id"));
  });

  it("compares NaN with NaN as equal, and NaN with a number as a change", async () => {
    const before: Row[] = [
      { id: 1, score: "NaN" },
      { id: 2, score: "NaN" },
      { id: 3, score: 2.5 },
    ];
    const after: Row[] = [
      { id: 1, score: "NaN" },
      { id: 2, score: 1.5 },
      { id: 3, score: 2.5 },
    ];
    // The values go in as DOUBLE (NaN is not JSON): CSV with a typed column.
    const csv = (rows: Row[]) => `id,score\n${rows.map((row) => `${row.id},${row.score}`).join("\n")}\n`;
    const publishCsv = async (rows: Row[], key?: string[]) => {
      const published = await publishTable({
        orderId,
        table: "floats",
        key,
        parts: [{ name: `floats-${++counter}.csv`, source: { stream: Readable.from([Buffer.from(csv(rows))]) } }],
      });
      return publicationDone(published.publication, 240_000);
    };
    expect(await publishCsv(before, ["id"])).toMatchObject({ status: "ready" });
    expect(await publishCsv(after)).toMatchObject({ status: "ready" });
    expect((await changeFile("floats", 2)).changes).toEqual({ inserted: 0, updated: 1, deleted: 0 });
  });
});

describe("a keyless snapshot's change files", { timeout: 300_000 }, () => {
  it("match a multiset difference computed here, duplicates counted", async () => {
    const v1: Row[] = [
      { sku: "a", price: 1 },
      { sku: "a", price: 1 },
      { sku: "b", price: 2 },
      { sku: "c", price: null },
      { sku: "d", price: 4 },
    ];
    const v2: Row[] = [
      { sku: "a", price: 1 },
      { sku: "b", price: 2 },
      { sku: "b", price: 2 },
      { sku: "c", price: null },
      { sku: "e", price: 5 },
    ];
    await version("keyless", v1);
    await version("keyless", v2);
    const { rows, changes } = await changeFile("keyless", 2);
    const expected = expectedChanges(v1, v2, ["sku", "price"], null);
    expect(rows.sort()).toEqual(expected.sort());
    // In the order of the whole rows (sku first), whatever their change type.
    expect((await changeFile("keyless", 2)).rows.map((row) => JSON.parse(row) as Row)).toEqual([
      { sku: "a", price: 1, _change_type: "delete" },
      { sku: "b", price: 2, _change_type: "insert" },
      { sku: "d", price: 4, _change_type: "delete" },
      { sku: "e", price: 5, _change_type: "insert" },
    ]);
    expect(changes).toEqual({ inserted: 2, updated: 0, deleted: 2 });
  });
});

describe("an append table's change files", { timeout: 300_000 }, () => {
  it("are its rows, all inserts, whatever earlier versions held", async () => {
    const first: Row[] = [{ id: 1, event: "open" }];
    const second: Row[] = [
      { id: 1, event: "open" },
      { id: 2, event: "close" },
    ];
    await version("log", first, { mode: "append" });
    await version("log", second);
    const { rows, changes } = await changeFile("log", 2);
    expect(rows.sort()).toEqual(expectedChanges(null, second, ["id", "event"], null).sort());
    expect(changes).toEqual({ inserted: 2, updated: 0, deleted: 0 });
  });
});

describe("the table.updated event", { timeout: 300_000 }, () => {
  it("reaches a subscribed receiver once per version, signed, with the Version and its order and table", async () => {
    const receiver = await startReceiver();
    try {
      const account = await db().order.findUniqueOrThrow({ where: { id: orderId }, select: { buyerId: true } });
      const { id: endpointId, secret } = await createEndpoint({
        buyerId: account.buyerId,
        url: receiver.url,
        events: ["table.updated"],
      });
      await version("announced", [{ id: 1, name: "a" }], { key: ["id"] });
      await version("announced", [
        { id: 1, name: "b" },
        { id: 2, name: "c" },
      ]);
      const messages = await db().webhookMessage.findMany({ where: { endpointId }, orderBy: { createdAt: "asc" } });
      expect(messages.map((message) => message.eventType)).toEqual(["table.updated", "table.updated"]);
      // The server's worker delivers them; once each.
      await waitFor(() => receiver.received.length >= 2, 60_000, "both table.updated messages to arrive");
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(receiver.received).toHaveLength(2);
      const bodies = receiver.received
        .map(
          (request) =>
            new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as {
              type: string;
              data: Record<string, unknown>;
            },
        )
        // Deliveries run side by side: compared in version order.
        .sort((a, b) => Number(a.data.version) - Number(b.data.version));
      expect(bodies.map((body) => [body.type, body.data.order_id, body.data.table, body.data.version])).toEqual([
        ["table.updated", orderId, "announced", 1],
        ["table.updated", orderId, "announced", 2],
      ]);
      expect(bodies[1]!.data).toEqual({
        order_id: orderId,
        table: "announced",
        ...JSON.parse(await versionJson(account.buyerId, orderId, "announced", 2)),
        // The table's freshness rides with it: null, as this table has no cadence.
        freshness: null,
      });
      expect(bodies[1]!.data.changes).toEqual({ inserted: 1, updated: 1, deleted: 0 });
    } finally {
      await receiver.close();
    }
  });
});
