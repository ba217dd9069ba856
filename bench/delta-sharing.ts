import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { profileStoredFile } from "../lib/datasets/profile";
import { makeRendition } from "../lib/datasets/renditions";
import { disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/jobs";
import { addOrderFile, createOrder } from "../lib/orders/admin";
import { formatSpread, spread, benchRounds } from "./lib/interleaved";
import {
  createBenchKeys,
  freshBenchDatabase,
  log,
  median,
  percentile,
  report,
  round,
  startAppServer,
} from "./lib/common";

/**
 * Delta Sharing on an order of BENCH_FILES files (default 1,000), against /api/v1 on the same
 * server, in BENCH_ROUNDS interleaved rounds (default 3), each figure the median of the rounds'
 * ratios with its spread:
 * - listing the order's tables (`GET .../schemas/{order}/tables?maxResults=1000`) against reading
 *   the order with its file list (`GET /api/v1/orders/{id}`), p50 of BENCH_SAMPLES requests each
 *   (default 50), the two kinds alternating;
 * - one table's query (`POST .../query`: protocol, metadata, one signed file URL) against the
 *   same order read, p50;
 * - a whole order the way each client gets every file's URL: the table list and one query per
 *   table, against the order read and one download redirect per file (`GET
 *   /api/v1/orders/{id}/files/{fileId}`, not followed), one request at a time.
 * The buyer is exempt from the rate limit (RATE_LIMIT_EXEMPT_BUYERS); files share one profiled
 * CSV's rows and its Parquet rendition (rows copied in SQL), so the work measured is the server's.
 */
const fileCount = Number(process.env.BENCH_FILES ?? 1000);
const samples = Number(process.env.BENCH_SAMPLES ?? 50);
const rounds = benchRounds();
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-sharing-"));

const databaseUrl = await freshBenchDatabase("dataset_access_bench_sharing");
process.env.DATABASE_URL = databaseUrl;
process.env.STORAGE_DIR = path.join(workDir, "storage");
process.env.DATASET_TEMP_DIR = path.join(workDir, "engine");

log(`an order of ${fileCount} profiled files with Parquet renditions`);
const buyer = await createBuyer("bench-sharing@example.com");
const order = await createOrder({ buyerId: buyer.id, name: "Bench sharing", status: "delivered" });
const rows = Array.from({ length: 1000 }, (_, i) => `${i},Product ${i},${i * 1.5},2026-10-01 08:00:00`);
const first = await addOrderFile({
  orderId: order.id,
  name: "products-1.csv",
  source: Readable.from([Buffer.from(`id,name,price,listed_at\n${rows.join("\n")}\n`)]),
});
await profileStoredFile(first.id, { queueRendition: false });
if ((await makeRendition(first.id, "parquet")) !== "ready") throw new Error("The Parquet rendition failed");
await closeJobQueue();
await disconnectDb();

const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
await pool.query(
  `INSERT INTO order_files (order_id, name, size, content_type, sha256, storage_key, format, compression,
                            profile_status, rows, columns, preview, profiled_at)
   SELECT order_id, 'products-' || n || '.csv', size, content_type, sha256, storage_key, format, compression,
          profile_status, rows, columns, preview, profiled_at
   FROM order_files, generate_series(2, $2::int) AS n WHERE id = $1`,
  [first.id, fileCount],
);
await pool.query(
  `INSERT INTO file_renditions (file_id, format, status, storage_key, size, sha256, version)
   SELECT f.id, r.format, r.status, r.storage_key, r.size, r.sha256, r.version
   FROM order_files f JOIN file_renditions r ON r.file_id = $1
   WHERE f.order_id = $2 AND f.id <> $1`,
  [first.id, order.id],
);
const fileIds = (
  await pool.query<{ id: string }>(`SELECT id FROM order_files WHERE order_id = $1 ORDER BY id`, [order.id])
).rows.map((row) => row.id);
const key = (await createBenchKeys(pool, [buyer.id])).get(buyer.id)!;
await pool.end();

const server = await startAppServer({
  databaseUrl,
  storageDir: process.env.STORAGE_DIR,
  env: { JOBS_WORKER: "off", RATE_LIMIT_EXEMPT_BUYERS: buyer.id },
});
const headers = { Authorization: `Bearer ${key}` };
const table = (fileId: string) => `/api/delta-sharing/shares/orders/schemas/${order.id}/tables/${fileId}`;

/** One request's time in ms, its body read; anything but the expected status stops the run. */
async function timed(pathAndQuery: string, init: RequestInit = {}, expected = 200): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}${pathAndQuery}`, { ...init, headers, redirect: "manual" });
  await response.arrayBuffer();
  if (response.status !== expected) throw new Error(`${pathAndQuery} answered ${response.status}`);
  return performance.now() - started;
}

const requests = {
  orderRead: () => timed(`/api/v1/orders/${order.id}`),
  listTables: () => timed(`/api/delta-sharing/shares/orders/schemas/${order.id}/tables?maxResults=1000`),
  query: (fileId: string) => timed(`${table(fileId)}/query`, { method: "POST", body: "{}" }),
};

async function wholeOrderShared(): Promise<number> {
  const started = performance.now();
  let pageToken = "";
  let listed = 0;
  do {
    const response = await fetch(
      `${server.url}/api/delta-sharing/shares/orders/schemas/${order.id}/tables?maxResults=1000${pageToken}`,
      { headers },
    );
    const page = (await response.json()) as { items: { name: string }[]; nextPageToken?: string };
    for (const item of page.items) await requests.query(item.name);
    listed += page.items.length;
    pageToken = page.nextPageToken ? `&pageToken=${page.nextPageToken}` : "";
  } while (pageToken);
  if (listed !== fileCount) throw new Error(`Listed ${listed} tables, not ${fileCount}`);
  return performance.now() - started;
}

async function wholeOrderApi(): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/v1/orders/${order.id}`, { headers });
  const body = (await response.json()) as { files: { id: string }[] };
  for (const file of body.files) await timed(`/api/v1/orders/${order.id}/files/${file.id}`, {}, 302);
  if (body.files.length !== fileCount) throw new Error(`The order read listed ${body.files.length} files`);
  return performance.now() - started;
}

const p50 = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const perRound: { orderRead: number; listTables: number; query: number; wholeApi: number; wholeShared: number }[] = [];
try {
  // Warm-up: both paths compiled and connected before anything is timed.
  for (let i = 0; i < 5; i++)
    await Promise.all([requests.orderRead(), requests.listTables(), requests.query(fileIds[i]!)]);
  for (let round_ = 0; round_ < rounds; round_++) {
    const times = { orderRead: [] as number[], listTables: [] as number[], query: [] as number[] };
    for (let i = 0; i < samples; i++) {
      times.orderRead.push(await requests.orderRead());
      times.listTables.push(await requests.listTables());
      times.query.push(await requests.query(fileIds[(round_ * samples + i) % fileIds.length]!));
    }
    const wholeApi = await wholeOrderApi();
    const wholeShared = await wholeOrderShared();
    perRound.push({
      orderRead: p50(times.orderRead),
      listTables: p50(times.listTables),
      query: p50(times.query),
      wholeApi,
      wholeShared,
    });
    log(
      `round ${round_ + 1}: order read p50 ${round(perRound.at(-1)!.orderRead)} ms, list tables ${round(perRound.at(-1)!.listTables)} ms, ` +
        `query ${round(perRound.at(-1)!.query)} ms; every file's URL: API ${round(wholeApi)} ms, Delta Sharing ${round(wholeShared)} ms`,
    );
  }
} finally {
  await server.stop();
  await fs.rm(workDir, { recursive: true, force: true });
}

const listRatio = spread(perRound.map((r) => r.listTables / r.orderRead));
const queryRatio = spread(perRound.map((r) => r.query / r.orderRead));
const wholeRatio = spread(perRound.map((r) => r.wholeShared / r.wholeApi));
const ms = (values: number[]) => round(median(values));
await report(
  "delta-sharing",
  {
    files: fileCount,
    rounds,
    samples_per_round: samples,
    p50_ms: {
      order_read: ms(perRound.map((r) => r.orderRead)),
      list_tables: ms(perRound.map((r) => r.listTables)),
      query: ms(perRound.map((r) => r.query)),
    },
    every_file_url_ms: {
      api: ms(perRound.map((r) => r.wholeApi)),
      delta_sharing: ms(perRound.map((r) => r.wholeShared)),
    },
    list_tables_vs_order_read: listRatio,
    query_vs_order_read: queryRatio,
    every_file_url_vs_api: wholeRatio,
  },
  `Order of ${fileCount} files, ${rounds} interleaved rounds: list tables p50 ${ms(perRound.map((r) => r.listTables))} ms = ` +
    `${formatSpread(listRatio)} of the /api/v1 order read's ${ms(perRound.map((r) => r.orderRead))} ms; one table query p50 ` +
    `${ms(perRound.map((r) => r.query))} ms = ${formatSpread(queryRatio)}; every file's URL via Delta Sharing ` +
    `${formatSpread(wholeRatio)} of via /api/v1 (order read + one redirect per file).`,
);
