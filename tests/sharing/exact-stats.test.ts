import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { compareDecimals, parseDecimal } from "../../lib/engine/decimal-text";
import { datasetJobsDone } from "../datasets/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";

/**
 * Delta Sharing's file skipping and its bad input on the production server (issue #37, defects 2,
 * 7 and 12): statistics of values a double cannot hold are published outside the real range and
 * hints compared exactly, a hint of any malformed shape is ignored (never a 500), `maxResults=0`
 * gives no token to loop on, and an impossible or too fine timestamp is read as written.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let orderId: string;
let table: string;

/** DECIMAL(38,20) and BIGINT values that Number() rounds into the range: 1 + 10^-20 and 2^53 + 1. */
const DECIMAL_MAX = "1.00000000000000000001";
const DECIMAL_MIN = "0.99999999999999999999";
const BIG_MAX = "9007199254740993";

async function wideParquet(): Promise<Buffer> {
  const file = path.join(workDir, "exact.parquet");
  const duckdb = await DuckDBInstance.create(":memory:");
  const connection = await duckdb.connect();
  try {
    await connection.run(
      `COPY (SELECT * FROM (VALUES
         (1, ${DECIMAL_MIN}::DECIMAL(38,20), 9007199254740992::BIGINT),
         (2, ${DECIMAL_MAX}::DECIMAL(38,20), ${BIG_MAX}::BIGINT)
       ) AS t(id, d, big)) TO '${file}' (FORMAT parquet)`,
    );
  } finally {
    connection.closeSync();
    duckdb.closeSync();
  }
  return fs.readFile(file);
}

beforeAll(async () => {
  env = await createTestEnvironment("sharing-exact");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "sharing-exact-"));
  const account = await buyer("sharing-exact");
  const created = await order(account.id, { name: "Exact", files: { "exact.parquet": await wideParquet() } });
  orderId = created.id;
  table = created.files[0]!.table!;
  key = (await apiKey(account.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine"), RATE_LIMIT_EXEMPT_BUYERS: account.id },
  });
  await datasetJobsDone();
  await waitFor(
    async () => (await db().tablePublication.count({ where: { status: { in: ["uploading", "processing"] } } })) === 0,
    240_000,
    "the file's table at version 1",
  );
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const tablePath = () => `/shares/orders/schemas/${orderId}/tables/${table}`;

function sharing(pathAndQuery: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}/api/delta-sharing${pathAndQuery}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** The file lines of a query (its stats as the raw JSON text, so no number is rounded reading it). */
async function fileLines(body: unknown): Promise<{ stats: string }[]> {
  const response = await sharing(`${tablePath()}/query`, body);
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { file?: { stats: string } })
    .flatMap((line) => (line.file ? [line.file] : []));
}

/** A bound of a stats text, as the decimal a reader of the JSON text gets (Spark reads it as the column's type). */
function boundText(stats: string, side: "minValues" | "maxValues", column: string): string {
  const section = new RegExp(`"${side}":\\{[^}]*"${column}":(-?[0-9.eE+-]+)`).exec(stats);
  expect(section, stats).not.toBeNull();
  return section![1]!;
}

const compare = (a: string, b: string) => compareDecimals(parseDecimal(a)!, parseDecimal(b)!);
const hint = (op: string, name: string, value: string, valueType: string) =>
  JSON.stringify({
    op,
    children: [
      { op: "column", name, valueType },
      { op: "literal", value, valueType },
    ],
  });

describe("per-file statistics and file skipping, exact beyond a double", () => {
  it("publishes a DECIMAL(38,20) and a BIGINT bound outside the real range, never inside", async () => {
    const [file] = await fileLines({});
    expect(file).toBeDefined();
    expect(compare(boundText(file!.stats, "maxValues", "d"), DECIMAL_MAX)).toBeGreaterThanOrEqual(0);
    expect(compare(boundText(file!.stats, "minValues", "d"), DECIMAL_MIN)).toBeLessThanOrEqual(0);
    expect(compare(boundText(file!.stats, "maxValues", "big"), BIG_MAX)).toBeGreaterThanOrEqual(0);
    expect(compare(boundText(file!.stats, "minValues", "big"), "9007199254740992")).toBeLessThanOrEqual(0);
  });

  it.each([
    ["d > 1", hint("greaterThan", "d", "1", "double")],
    ["d >= 1.00000000000000000001", hint("greaterThanOrEqual", "d", DECIMAL_MAX, "double")],
    ["d < 1", hint("lessThan", "d", "1", "double")],
    ["big = 2^53 + 1", hint("equal", "big", BIG_MAX, "long")],
  ])("keeps the part that holds a row for %s", async (_case, jsonPredicateHints) => {
    expect(await fileLines({ jsonPredicateHints })).toHaveLength(1);
  });

  it.each([
    ["d > 2", hint("greaterThan", "d", "2", "double")],
    ["d < 0.5", hint("lessThan", "d", "0.5", "double")],
    ["big < 0", hint("lessThan", "big", "0", "long")],
  ])("still drops the part for %s, which no row can match", async (_case, jsonPredicateHints) => {
    expect(await fileLines({ jsonPredicateHints })).toHaveLength(0);
  });
});

describe("malformed predicate hints are ignored", () => {
  const column = { op: "column", name: "id", valueType: "int" };
  const literal = { op: "literal", value: "5", valueType: "int" };
  it.each([
    ["a null child", { jsonPredicateHints: JSON.stringify({ op: "equal", children: [null, literal] }) }],
    ["a null literal", { jsonPredicateHints: JSON.stringify({ op: "equal", children: [column, null] }) }],
    ["isNull of null", { jsonPredicateHints: JSON.stringify({ op: "isNull", children: [null] }) }],
    ["and with a null", { jsonPredicateHints: JSON.stringify({ op: "and", children: [null, null] }) }],
    ["numbers as children", { jsonPredicateHints: JSON.stringify({ op: "lessThan", children: [1, 2] }) }],
    ["children an object", { jsonPredicateHints: JSON.stringify({ op: "or", children: { a: 1 } }) }],
    ["JSON that is not an object", { jsonPredicateHints: "null" }],
    ["text that is not JSON", { jsonPredicateHints: "{op: equal" }],
    ["jsonPredicateHints an object, not text", { jsonPredicateHints: { op: "equal", children: [column, literal] } }],
    ["jsonPredicateHints a number", { jsonPredicateHints: 5 }],
    ["predicateHints text, not a list", { predicateHints: "id = 5" }],
    ["predicateHints of numbers", { predicateHints: [1, null] }],
  ])("answers 200 with every part for %s", async (_case, body) => {
    expect(await fileLines(body)).toHaveLength(1);
  });
});

describe("list and history parameters read as written", () => {
  it("answers maxResults=0 with no items and no nextPageToken (a paging client stops)", async () => {
    for (const list of ["/shares", "/shares/orders/schemas", `/shares/orders/schemas/${orderId}/tables`]) {
      const response = await sharing(`${list}?maxResults=0`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as { items?: unknown[]; nextPageToken?: string };
      expect(page.items ?? []).toEqual([]);
      expect(page.nextPageToken).toBeUndefined();
    }
  });

  it.each([
    ["startingTimestamp=2026-02-30T00:00:00Z", /February 2026 has 28 days/],
    ["startingTimestamp=2026-04-31T10:00:00Z", /April 2026 has 30 days/],
    ["startingTimestamp=2026-01-01T25:00:00Z", /time of day/],
  ])("refuses %s with 400 and a sentence", async (query, why) => {
    const response = await sharing(`${tablePath()}/version?${query}`);
    const body = (await response.json()) as { errorCode: string; message: string };
    expect(response.status).toBe(400);
    expect(body.errorCode).toBe("INVALID_PARAMETER_VALUE");
    expect(body.message).toMatch(why);
  });

  it("refuses timestamp=2026-02-30 in a query body too", async () => {
    const response = await sharing(`${tablePath()}/query`, { timestamp: "2026-02-30T00:00:00Z" });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toMatch(/February 2026 has 28 days/);
  });

  it("compares a startingTimestamp finer than a millisecond with the version's millisecond exactly", async () => {
    const [version] = await db().tableVersion.findMany({ where: { table: { orderId } }, select: { createdAt: true } });
    const made = version!.createdAt.toISOString(); // created_at is kept to the millisecond
    const at = (fraction: string) => encodeURIComponent(made.replace(/Z$/, `${fraction}Z`));
    // At its very millisecond: the version. Half a millisecond after it: no version is made at or after that.
    const same = await sharing(`${tablePath()}/version?startingTimestamp=${at("000")}`);
    expect(same.status).toBe(200);
    expect(same.headers.get("delta-table-version")).toBe("1");
    const later = await sharing(`${tablePath()}/version?startingTimestamp=${at("500")}`);
    expect(later.status, await later.clone().text()).toBe(400);
    expect(((await later.json()) as { message: string }).message).toMatch(/after the table's current version/);
  });
});
