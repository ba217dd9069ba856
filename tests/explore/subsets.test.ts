import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sqlQuery } from "../../lib/db/client";
import { setOrderStatus } from "../../lib/operator/orders";
import { driverOf } from "../../lib/storage";
import { readS3Object } from "../../lib/storage/s3";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { products, productsCsv, publicationDone, withoutQualityChecks } from "../tables/helpers";

/**
 * Subsets (contract Part 7) on the production server, its worker and engine: each format's file
 * read back, 202 then 302, the same request reusing one file, identical requests at once making one,
 * every refusal, the tenant boundary, a refunded order, a failed subset asked again, and the sweep
 * removing a subset past its 24 hours (a second server whose clock starts 25 hours on: CLOCK_START);
 * and the fair shares (contract Part 8): 2 pending subsets per account, the worker's turns across
 * accounts, the kept files within an account's quota (a small SUBSET_QUOTA_BYTES).
 * Runs on local storage and, with STORAGE_DRIVER=s3, on the tests' S3 store.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let owner: { id: string; key: string; orderId: string; refundedId: string };
let other: { id: string; key: string; orderId: string };
/** Accounts of their own for the fair shares: a heavy one, a light one, one with a small quota. */
let heavy: { id: string; key: string; orderId: string };
let light: { id: string; key: string; orderId: string };
let quota: { id: string; key: string; orderId: string };
const METRICS_TOKEN = "metrics-token-for-the-subsets-test-0123";

let published = 0;
async function publish(orderId: string, table: string, csv: string, key: string[] = ["id"]) {
  // A part's name is unique in its order.
  const part = `${table}-${++published}.csv`;
  const { publication } = await publishTable({
    orderId,
    table,
    key,
    parts: [{ name: part, source: { stream: Readable.from([csv]) } }],
  });
  expect(await publicationDone(publication, 240_000)).toMatchObject({ status: "ready" });
}

function serverEnv(extra: Record<string, string> = {}) {
  return {
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
      RATE_LIMIT_EXEMPT_BUYERS: [owner, other, heavy, light, quota].map((account) => account.id).join(","),
      METRICS_TOKEN,
      ...extra,
    },
  };
}

beforeAll(async () => {
  env = await createTestEnvironment("subsets");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "subsets-"));
  const ownerAccount = await buyer("subsets-owner");
  const otherAccount = await buyer("subsets-other");
  owner = {
    id: ownerAccount.id,
    key: (await apiKey(ownerAccount.id)).secret,
    orderId: (await order(ownerAccount.id, { name: "Prices" })).id,
    refundedId: (await order(ownerAccount.id, { name: "Refunded later" })).id,
  };
  other = {
    id: otherAccount.id,
    key: (await apiKey(otherAccount.id)).secret,
    orderId: (await order(otherAccount.id, { name: "Other prices" })).id,
  };
  const account = async (label: string) => {
    const created = await buyer(label);
    return {
      id: created.id,
      key: (await apiKey(created.id)).secret,
      orderId: (await order(created.id, { name: label })).id,
    };
  };
  heavy = await account("subsets-heavy");
  light = await account("subsets-light");
  quota = await account("subsets-quota");
  server = await startServer(serverEnv());
  // products v1: ids 1-30; v2: ids 1-40 (the rows' key order is id). A text value that reads as a formula.
  await publish(owner.orderId, "products", productsCsv(products(1, 30)));
  await withoutQualityChecks(owner.orderId, "products");
  await publish(owner.orderId, "products", productsCsv([...products(1, 39), { id: 40, name: "=1+1", price: 60 }]));
  // A value abs() cannot take: the filter binds, and fails only when the row is read (in the job).
  await publish(owner.orderId, "edge", "id,name,price\n1,one,1\n-9223372036854775808,min,2\n");
  await publish(owner.refundedId, "products", productsCsv(products(1, 3)));
  await publish(other.orderId, "products", productsCsv(products(501, 40)));
  for (const { orderId } of [heavy, light, quota]) await publish(orderId, "products", productsCsv(products(1, 40)));
}, 1_200_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const subset = (
  orderId: string,
  query: Record<string, string>,
  { table = "products", key = owner.key }: { table?: string; key?: string } = {},
) =>
  fetch(`${server.url}/api/v1/orders/${orderId}/tables/${table}/subset?${new URLSearchParams(query)}`, {
    headers: { Authorization: `Bearer ${key}` },
    redirect: "manual",
  });

/** Asks until the subset is ready (202s, each with Retry-After), then downloads it through its 302. */
async function ready(
  orderId: string,
  query: Record<string, string>,
  options: { table?: string; key?: string } = {},
): Promise<{ first: number; bytes: Buffer; download: Response }> {
  let first = 0;
  let answer: Response | undefined;
  await waitFor(
    async () => {
      answer = await subset(orderId, query, options);
      first ||= answer.status;
      if (answer.status !== 202) return true;
      expect(answer.headers.get("retry-after")).toBe("5");
      expect(await answer.json()).toMatchObject({ code: "rendition_pending" });
      return false;
    },
    120_000,
    `the subset ${JSON.stringify(query)}`,
  );
  expect(answer!.status, await answer!.clone().text()).toBe(302);
  const download = await fetch(answer!.headers.get("location")!);
  expect(download.status).toBe(200);
  return { first, bytes: Buffer.from(await download.arrayBuffer()), download };
}

/** A Parquet file's columns (name and type) and rows, read back by DuckDB in this process. */
async function readParquet(bytes: Buffer): Promise<{ columns: string[][]; rows: unknown[][] }> {
  const file = path.join(workDir, `read-${Date.now()}-${Math.random()}.parquet`);
  await fs.writeFile(file, bytes);
  const connection = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
    const rows = await connection.runAndReadAll(`SELECT * FROM read_parquet('${file}')`);
    return {
      columns: described.getRowsJson().map((row) => [String(row[0]), String(row[1])]),
      rows: rows.getRowsJson() as unknown[][],
    };
  } finally {
    connection.closeSync();
  }
}

const subsetRows = (orderId: string) =>
  sqlQuery<{ id: string; storageKey: string | null; where: string | null; format: string; status: string }>(
    `SELECT id, storage_key AS "storageKey", "where", format, status FROM table_subsets WHERE order_id = $1`,
    [orderId],
  );

async function objectExists(location: string): Promise<boolean> {
  if (driverOf(location) === "s3") {
    return readS3Object(location).then(
      ({ body }) => (body.destroy(), true),
      () => false,
    );
  }
  return fs.access(path.join(env.storageDir, location)).then(
    () => true,
    () => false,
  );
}

describe("formats", { timeout: 180_000 }, () => {
  it("writes Parquet with the columns asked and their types, the matching rows in key order (202, then 302)", async () => {
    const { first, bytes, download } = await ready(owner.orderId, { columns: "price,id", where: "id <= 3 OR id > 38" });
    expect(first).toBe(202);
    expect(download.headers.get("content-type")).toBe("application/vnd.apache.parquet");
    const read = await readParquet(bytes);
    expect(read.columns).toEqual([
      ["price", "DOUBLE"],
      ["id", "BIGINT"],
    ]);
    expect(read.rows).toEqual([
      [1.5, "1"],
      [3, "2"],
      [4.5, "3"],
      [58.5, "39"],
      [60, "40"],
    ]);
  });

  it("writes CSV with a header and text formulas made inert, and JSON Lines; an older version when asked", async () => {
    const csv = await ready(owner.orderId, { format: "csv", where: "id >= 39" });
    expect(csv.download.headers.get("content-disposition")).toContain("products-v2-subset.csv");
    expect(csv.bytes.toString()).toBe("id,name,price\n39,Product 39,58.5\n40,'=1+1,60.0\n");
    const jsonl = await ready(owner.orderId, { format: "jsonl", columns: "name,id", where: "id > 38" });
    expect(
      jsonl.bytes
        .toString()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual([
      { name: "Product 39", id: 39 },
      { name: "=1+1", id: 40 },
    ]);
    const v1 = await readParquet((await ready(owner.orderId, { version: "1", columns: "id" })).bytes);
    expect(v1.rows.map(([id]) => Number(id))).toEqual(Array.from({ length: 30 }, (_, at) => at + 1));
  });
});

describe("reuse", { timeout: 180_000 }, () => {
  it("serves the same request within 24 hours from the same file, all columns named or not", async () => {
    const query = { where: "price > 50" };
    const made = await ready(owner.orderId, query);
    const before = (await subsetRows(owner.orderId)).filter((row) => row.where === "price > 50");
    expect(before).toHaveLength(1);
    // Asked again, and with every column named in the version's order: at once a 302, the same object.
    for (const again of [query, { ...query, columns: "id,name,price" }]) {
      const reused = await ready(owner.orderId, again);
      expect(reused.first).toBe(302);
      expect(reused.bytes.equals(made.bytes)).toBe(true);
    }
    expect((await subsetRows(owner.orderId)).filter((row) => row.where === "price > 50")).toEqual(before);
    // Another format is another subset.
    expect((await ready(owner.orderId, { ...query, format: "csv" })).first).toBe(202);
  });

  it("makes one file for identical requests at once", async () => {
    const query = { where: "id BETWEEN 10 AND 12", format: "jsonl" };
    // Five: each is checked in the data engine first, where an account has 1 query running and 4 waiting.
    const answers = await Promise.all(Array.from({ length: 5 }, () => subset(owner.orderId, query)));
    for (const answer of answers) expect([202, 302]).toContain(answer.status);
    await ready(owner.orderId, query);
    const made = (await subsetRows(owner.orderId)).filter((row) => row.where === query.where);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ status: "ready", format: "jsonl" });
  });
});

describe("refusals", { timeout: 120_000 }, () => {
  it.each([
    ["a filter that is not allowed", { where: "id = 1; DROP TABLE x" }, 400, "invalid_filter", /;/],
    ["a function that is not allowed", { where: "read_csv('/etc/passwd') IS NULL" }, 400, "invalid_filter", /read_csv/],
    ["a filter whose types do not agree", { where: "name > 3" }, 400, "invalid_filter", /compare|cast/i],
    ["an unknown column asked", { columns: "id,nope" }, 400, "unknown_column", /nope/],
    ["an unknown column in the filter", { where: "nope = 1" }, 400, "unknown_column", /nope/],
    ["a column asked twice", { columns: "id,id" }, 400, "invalid_request", /twice/],
    ["a format it does not make", { format: "xlsx" }, 400, "invalid_request", /format/],
    ["a malformed version", { version: "0" }, 400, "invalid_request", /version/],
    ["a version that does not exist", { version: "9" }, 404, "version_not_found", /9/],
  ])("refuses %s", async (_, query, status, code, detail) => {
    const before = (await subsetRows(owner.orderId)).length;
    const answer = await subset(owner.orderId, query);
    const body = (await answer.json()) as { code: string; detail: string };
    expect(answer.status, JSON.stringify(body)).toBe(status);
    expect(body.code).toBe(code);
    expect(body.detail).toMatch(detail);
    expect(answer.headers.get("content-type")).toBe("application/problem+json");
    // Refused before anything was queued.
    expect(await subsetRows(owner.orderId)).toHaveLength(before);
  });

  it.each([
    ["an unknown table", () => subset(owner.orderId, {}, { table: "nothing" }), 404, "table_not_found"],
    ["another buyer's order", () => subset(owner.orderId, {}, { key: other.key }), 404, "order_not_found"],
    ["a malformed order id", () => subset("ord_nope", {}), 404, "order_not_found"],
  ])("refuses %s", async (_, send, status, code) => {
    const answer = await send();
    expect(answer.status).toBe(status);
    expect(await answer.json()).toMatchObject({ code });
  });
});

describe("the tenant boundary", { timeout: 180_000 }, () => {
  it("gives another buyer asking the same of their own order their own file, never this one", async () => {
    const query = { where: "id > 35", columns: "id" };
    const mine = await ready(owner.orderId, query);
    const theirs = await ready(other.orderId, query, { key: other.key });
    expect((await readParquet(mine.bytes)).rows.map(([id]) => Number(id))).toEqual([36, 37, 38, 39, 40]);
    expect((await readParquet(theirs.bytes)).rows.map(([id]) => Number(id))).toHaveLength(40);
    const [ownRow] = (await subsetRows(owner.orderId)).filter((row) => row.where === "id > 35");
    const [otherRow] = await subsetRows(other.orderId);
    expect(otherRow!.storageKey).not.toBe(ownRow!.storageKey);
    // Their key on this order: as if it did not exist.
    expect((await subset(owner.orderId, query, { key: other.key })).status).toBe(404);
  });

  it("answers 409 for a refunded order even with its subset ready", async () => {
    await ready(owner.refundedId, {});
    await setOrderStatus(owner.refundedId, "refunded");
    const answer = await subset(owner.refundedId, {});
    expect(answer.status).toBe(409);
    expect(await answer.json()).toMatchObject({ code: "order_not_delivered" });
  });
});

describe("a failed subset", { timeout: 180_000 }, () => {
  it("answers its error once, not a 5xx, and is made anew when asked again", async () => {
    const query = { where: "abs(id) > 0" };
    expect((await subset(owner.orderId, query, { table: "edge" })).status).toBe(202);
    let failed: Response | undefined;
    await waitFor(
      async () => (failed = await subset(owner.orderId, query, { table: "edge" })).status !== 202,
      120_000,
      "the subset to fail",
    );
    expect(failed!.status).toBe(400);
    expect(await failed!.json()).toMatchObject({ code: "invalid_filter", detail: expect.stringMatching(/Overflow/) });
    expect((await subset(owner.orderId, query, { table: "edge" })).status).toBe(202);
  });
});

/** The subset rows of an order, with when the worker took each. */
const takenRows = (orderId: string) =>
  sqlQuery<{
    id: string;
    where: string | null;
    startedAt: Date | null;
    size: string | null;
    storageKey: string | null;
  }>(
    `SELECT id, "where", started_at AS "startedAt", size::text AS size, storage_key AS "storageKey"
     FROM table_subsets WHERE order_id = $1`,
    [orderId],
  );

async function metric(name: string): Promise<number> {
  const text = await (
    await fetch(`${server.url}/api/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
}

describe("fair shares", { timeout: 300_000 }, () => {
  /** The small quota the last two tests' server runs with: three of their subsets. */
  let quotaBytes = 0;
  afterAll(async () => {
    await server.stop();
    server = await startServer(serverEnv());
  });

  it("lets an account have 2 subsets pending, and the worker makes another account's before its second", async () => {
    // Asked while no worker runs, so all wait: the worker then chooses among them.
    await server.stop();
    server = await startServer(serverEnv({ JOBS_WORKER: "off" }));
    const heavyQueries = [1, 2, 3, 4].map((n) => ({ where: `id > ${n}`, format: "csv" }));
    const answers = await Promise.all(heavyQueries.map((query) => subset(heavy.orderId, query, { key: heavy.key })));
    // At once, across the check and the insert: exactly 2 queued, the rest refused.
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 202, 429, 429]);
    for (const refused of answers.filter((answer) => answer.status === 429)) {
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(await refused.json()).toMatchObject({
        code: "too_many_queries",
        detail: expect.stringMatching(/^2 of your subsets are being made/),
      });
    }
    expect(await metric("table_subsets_refused_total")).toBe(2);
    const queued = heavyQueries.filter((_, at) => answers[at]!.status === 202);
    // The same request again is not a new job: 202 as before; another new one is still refused.
    expect((await subset(heavy.orderId, queued[0]!, { key: heavy.key })).status).toBe(202);
    expect((await subset(heavy.orderId, { where: "id > 9" }, { key: heavy.key })).status).toBe(429);
    expect(await takenRows(heavy.orderId)).toHaveLength(2);
    const small = { where: "id = 1", columns: "id" };
    expect((await subset(light.orderId, small, { key: light.key })).status).toBe(202);

    // One subset loop (one engine process), so the order the worker takes them in is its turns alone.
    await server.stop();
    server = await startServer(serverEnv({ DATASET_ENGINE_PROCESSES: "1" }));
    for (const query of queued) await ready(heavy.orderId, query, { key: heavy.key });
    await ready(light.orderId, small, { key: light.key });
    const started = (rows: { startedAt: Date | null }[]) => rows.map((row) => row.startedAt!.getTime()).sort();
    const [heavyFirst, heavySecond] = started(await takenRows(heavy.orderId));
    const [lightOne] = started(await takenRows(light.orderId));
    // One FIFO would make the heavy account's two first.
    expect(heavyFirst).toBeLessThan(lightOne!);
    expect(lightOne).toBeLessThan(heavySecond!);
    // Made, they are no longer counted: the account may ask for new ones.
    expect((await subset(heavy.orderId, { where: "id > 9" }, { key: heavy.key })).status).toBe(202);
  });

  it("makes one subset of an account at a time, though the worker has a loop free for its second", async () => {
    const pending = async () =>
      (await sqlQuery(`SELECT 1 FROM table_subsets WHERE order_id = $1 AND status = 'pending'`, [heavy.orderId]))
        .length;
    await waitFor(async () => (await pending()) === 0, 120_000, "the heavy account's subsets to be made");
    await server.stop();
    server = await startServer(serverEnv({ JOBS_WORKER: "off" }));
    const queries = [30, 31].map((n) => ({ where: `id > ${n}`, format: "jsonl" }));
    for (const query of queries) expect((await subset(heavy.orderId, query, { key: heavy.key })).status).toBe(202);
    // The worker starts with both waiting: its two loops (two engine processes) would take one each at once.
    await server.stop();
    server = await startServer(serverEnv());
    await waitFor(async () => (await pending()) === 0, 120_000, "both subsets to be made");
    // Read before any 302: last_used_at is still when each was made.
    const made = await sqlQuery<{ startedAt: Date; madeAt: Date }>(
      `SELECT started_at AS "startedAt", last_used_at AS "madeAt" FROM table_subsets
       WHERE order_id = $1 AND "where" = ANY($2) AND status = 'ready' ORDER BY started_at`,
      [heavy.orderId, queries.map((query) => query.where)],
    );
    expect(made).toHaveLength(2);
    expect(made[1]!.startedAt.getTime()).toBeGreaterThanOrEqual(made[0]!.madeAt.getTime());
  });

  it("keeps an account's subsets within its quota, the least recently used removed first", async () => {
    // Nine rows of two-digit ids each: CSV files of one size.
    const nine = (from: number) => ({ columns: "id,name", format: "csv", where: `id BETWEEN ${from} AND ${from + 8}` });
    const rowOf = async (query: { where: string }) =>
      (await takenRows(quota.orderId)).find((row) => row.where === query.where);
    const [first, second, third, fourth] = [11, 21, 31, 12].map(nine);
    await ready(quota.orderId, first!, { key: quota.key });
    const size = Number((await rowOf(first!))!.size);
    expect(size).toBeGreaterThan(0);
    quotaBytes = 3 * size;
    await server.stop();
    server = await startServer(serverEnv({ SUBSET_QUOTA_BYTES: String(quotaBytes) }));
    await ready(quota.orderId, second!, { key: quota.key });
    await ready(quota.orderId, third!, { key: quota.key });
    // Used again: now the second is the least recently used.
    expect((await ready(quota.orderId, first!, { key: quota.key })).first).toBe(302);
    const secondRow = (await rowOf(second!))!;
    expect((await ready(quota.orderId, fourth!, { key: quota.key })).first).toBe(202);
    const kept = await takenRows(quota.orderId);
    expect(kept.map((row) => row.where).sort()).toEqual([first, third, fourth].map((query) => query!.where).sort());
    expect(kept.reduce((sum, row) => sum + Number(row.size), 0)).toBeLessThanOrEqual(quotaBytes);
    expect(await objectExists(secondRow.storageKey!)).toBe(false);
    expect(await metric("table_subsets_evicted_total")).toBe(1);
    // A cache: asked again, it is made anew (the least recently used, the third, goes for it).
    expect((await ready(quota.orderId, second!, { key: quota.key })).first).toBe(202);
    expect(await rowOf(third!)).toBeUndefined();
  });

  it("answers 422 subset_too_large once for a subset larger than the quota, removing nothing for it", async () => {
    const before = (await takenRows(quota.orderId)).map((row) => row.id).sort();
    const whole = { columns: "id,name", format: "csv" };
    expect((await subset(quota.orderId, whole, { key: quota.key })).status).toBe(202);
    let refused: Response | undefined;
    await waitFor(
      async () => (refused = await subset(quota.orderId, whole, { key: quota.key })).status !== 202,
      120_000,
      "the subset to be refused",
    );
    expect(refused!.status).toBe(422);
    const body = (await refused!.json()) as { code: string; detail: string };
    expect(body.code).toBe("subset_too_large");
    // Its size and the quota, as formatBytes writes them (under 1,000 bytes: "402 B").
    expect(body.detail).toMatch(new RegExp(`^The subset is \\d+ B, more than the ${quotaBytes} B of subsets`));
    expect((await takenRows(quota.orderId)).map((row) => row.id).sort()).toEqual(before);
    // Said once: asked again, it is tried anew.
    expect((await subset(quota.orderId, whole, { key: quota.key })).status).toBe(202);
  });
});

describe("after 24 hours", { timeout: 300_000 }, () => {
  it("the sweep removes the object and the row, and the same request makes the subset again", async () => {
    const query = { columns: "id", where: "id = 7" };
    await ready(owner.orderId, query);
    const [made] = (await subsetRows(owner.orderId)).filter((row) => row.where === "id = 7");
    // In the store the run was started with.
    expect(driverOf(made!.storageKey!)).toBe(process.env.STORAGE_DRIVER === "s3" ? "s3" : "local");
    expect(await objectExists(made!.storageKey!)).toBe(true);
    await server.stop();
    // The worker of a server whose clock is 25 hours on sweeps when it starts.
    const at = new Date(Date.now() + 25 * 3600_000).toISOString();
    server = await startServer(serverEnv({ CLOCK_START: at }));
    await waitFor(
      async () => !(await subsetRows(owner.orderId)).some((row) => row.id === made!.id),
      120_000,
      "the sweep",
    );
    expect(await objectExists(made!.storageKey!)).toBe(false);
    const again = await ready(owner.orderId, query);
    expect(again.first).toBe(202);
    expect((await readParquet(again.bytes)).rows).toEqual([["7"]]);
    const [remade] = (await subsetRows(owner.orderId)).filter((row) => row.where === "id = 7");
    expect(remade!.id).not.toBe(made!.id);
  });
});
