import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { setOrderStatus } from "../../lib/operator/orders";
import { runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, type TestS3 } from "../helpers/s3";
import { startServer, type TestServer } from "../helpers/server";
import { partFile, products, productsCsv, publicationDone } from "../tables/helpers";

/**
 * On S3 storage the query engine reads local copies of a version's parts (lib/explore/query-cache.ts):
 * the copies stay within DATASET_QUERY_CACHE_MAX, the least recently used going first; a copy a
 * running query reads is not removed, even when that query alone holds the cache over its bound;
 * the copies of a refunded order's files are removed at the next query.
 */

let s3: TestS3;
let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;
let otherOrderId: string;
let key: string;
/** Each table's part: its file id and its Parquet rendition's size. */
const parts: Record<string, { fileId: string; size: number }> = {};
let cacheMax: number;

async function publish(order: string, table: string, rows: ReturnType<typeof products>) {
  const answer = await runAdminJson<{ publication: string }>(
    { ...s3.env, DATABASE_URL: env.database.url, DATASET_TEMP_DIR: path.join(workDir, "cli") },
    "table:publish",
    "--order",
    order,
    "--table",
    table,
    "--path",
    await partFile(workDir, `${table}.csv`, productsCsv(rows)),
  );
  expect(await publicationDone(answer.publication, 240_000)).toMatchObject({ status: "ready" });
  const rendition = await db().fileRendition.findFirstOrThrow({
    where: { format: "parquet", file: { orderId: order, name: `${table}.csv` } },
    select: { fileId: true, size: true },
  });
  parts[table] = { fileId: rendition.fileId, size: Number(rendition.size) };
}

const serverEnv = (extra: Record<string, string> = {}) => ({
  ...s3.env,
  REDIS_URL: "",
  DATASET_TEMP_DIR: path.join(workDir, "engine"),
  ...extra,
});

beforeAll(async () => {
  s3 = await startTestS3();
  Object.assign(process.env, s3.env);
  env = await createTestEnvironment("explore-query-cache");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "explore-query-cache-"));
  const account = await buyer("query-cache");
  orderId = (await order(account.id, { name: "Cached" })).id;
  otherOrderId = (await order(account.id, { name: "Refunded later" })).id;
  key = (await apiKey(account.id)).secret;
  // A server to publish with (its worker makes the renditions), then one with a cache bound that
  // holds any two of a, b and c but not the three.
  const publisher = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: serverEnv() });
  try {
    await publish(orderId, "a", products(1, 40));
    await publish(orderId, "b", products(101, 40));
    await publish(orderId, "c", products(201, 40));
    await publish(otherOrderId, "d", products(301, 40));
  } finally {
    await publisher.stop();
  }
  cacheMax = parts.a!.size + parts.b!.size + parts.c!.size - 1;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: serverEnv({ DATASET_QUERY_CACHE_MAX: `${cacheMax / 1000}KB`, RATE_LIMIT_EXEMPT_BUYERS: account.id }),
  });
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  await s3?.stop();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const api = async (pathAndQuery: string) => {
  const response = await fetch(`${server.url}/api/v1${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return JSON.parse(text) as { rows: unknown[][] };
};
const firstRow = (table: string, order = orderId) => api(`/orders/${order}/tables/${table}/rows?limit=1`);

/** The tables whose parts the cache holds now, and the bytes it holds. */
async function cached(): Promise<{ tables: string[]; bytes: number }> {
  const folder = path.join(workDir, "engine", "query-cache");
  const names = await fs.readdir(folder);
  const tables = Object.entries(parts)
    .filter(([, part]) => names.some((name) => name.startsWith(`${part.fileId}-parquet.`)))
    .map(([table]) => table);
  let bytes = 0;
  for (const name of names) bytes += (await fs.stat(path.join(folder, name))).size;
  return { tables, bytes };
}

describe("the query engine's copies of S3 objects", () => {
  it("stay within the bound, the least recently used removed first", async () => {
    expect(await firstRow("a")).toMatchObject({ rows: [[1, "Product 1", 1.5]] });
    await firstRow("b");
    expect((await cached()).tables).toEqual(["a", "b"]);
    await firstRow("c");
    expect(await cached()).toEqual({ tables: ["b", "c"], bytes: parts.b!.size + parts.c!.size });
    await firstRow("b");
    expect(await firstRow("a")).toMatchObject({ rows: [[1, "Product 1", 1.5]] });
    expect((await cached()).tables).toEqual(["a", "b"]);
  });

  it("are kept while a query reads them, over the bound, then trimmed", async () => {
    const answer = await api(
      `/orders/${orderId}/sql?${new URLSearchParams({ q: "SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) + (SELECT count(*) FROM c) AS n" })}`,
    );
    expect(answer.rows).toEqual([[120]]);
    const after = await cached();
    expect(after.tables).toHaveLength(2);
    expect(after.bytes).toBeLessThanOrEqual(cacheMax);
  });

  it("of a refunded order's files are removed at the next query", async () => {
    await firstRow("d", otherOrderId);
    expect((await cached()).tables).toContain("d");
    await setOrderStatus(otherOrderId, "refunded");
    await firstRow("a");
    expect((await cached()).tables).not.toContain("d");
  });
});
