import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/queue";
import { processPendingNow } from "../lib/tables/pipeline";
import { addOrderFile, createOrder } from "../lib/operator/orders";
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
 * Delta Sharing on one table of BENCH_PARTS parts (default 1,000), against /api/v1 on the same
 * server, in BENCH_ROUNDS interleaved rounds (default 3), each figure the median of the rounds'
 * ratios with its spread:
 * - the table's query (`POST .../query`: protocol, metadata, one signed URL and stats per part)
 *   against BASELINE (the order's read; `GET /api/v1/orders/{id}/tables/{name}` once that route is
 *   on main: switch BASELINE), p50 of BENCH_SAMPLES requests each (default 50), alternating;
 * - a query whose `jsonPredicateHints` match one part's statistics: its p50, and that it answers
 *   exactly one `file` line;
 * - listing the order's tables against the same baseline.
 * The table is made by the real pipeline (one part published, profiled, its Parquet rendition and
 * its statistics made, version 1), then its part is copied in SQL to BENCH_PARTS parts of that
 * version sharing the bytes, each copy's statistics given its own id range (part n: ids n*1000 to
 * n*1000+999), so the work measured is the server's. The buyer is exempt from the rate limit.
 */
const partCount = Number(process.env.BENCH_PARTS ?? 1000);
const samples = Number(process.env.BENCH_SAMPLES ?? 50);
const rounds = benchRounds();
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-sharing-"));

/**
 * The /api/v1 read the query is compared with: "order" (`GET /api/v1/orders/{id}`) until the
 * table route is on main, then "table" (`GET /api/v1/orders/{id}/tables/{name}`); BENCH_BASELINE=table switches.
 */
const BASELINE_READ = (process.env.BENCH_BASELINE ?? "order") as "order" | "table";
const BASELINE = (orderId: string, table: string) =>
  BASELINE_READ === "table" ? `/api/v1/orders/${orderId}/tables/${table}` : `/api/v1/orders/${orderId}`;

const databaseUrl = await freshBenchDatabase("dataset_access_bench_sharing");
process.env.DATABASE_URL = databaseUrl;
process.env.STORAGE_DIR = path.join(workDir, "storage");
process.env.DATASET_TEMP_DIR = path.join(workDir, "engine");

log(`a table of ${partCount} parts, version 1 made by the pipeline`);
const buyer = await createBuyer("bench-sharing@example.com");
const order = await createOrder({ buyerId: buyer.id, name: "Bench sharing", status: "delivered" });
const rows = Array.from({ length: 1000 }, (_, i) => `${i},Product ${i},${i * 1.5},2026-10-01 08:00:00`);
const first = await addOrderFile({
  orderId: order.id,
  name: "products-0000.csv",
  source: Readable.from([Buffer.from(`id,name,price,listed_at\n${rows.join("\n")}\n`)]),
});
await processPendingNow();
await closeEnginePool();
await closeJobQueue();
await disconnectDb();
const tableName = first.table!;

const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const made = await pool.query<{ publication_id: string; stats: { minValues: { id: number } } | null }>(
  `SELECT f.publication_id, r.stats FROM order_files f JOIN file_renditions r ON r.file_id = f.id AND r.format = 'parquet'
   JOIN table_versions v ON v.publication_id = f.publication_id WHERE f.id = $1`,
  [first.id],
);
if (made.rows[0]?.stats?.minValues.id !== 0) throw new Error("Version 1 or its part's statistics were not made");
await pool.query(
  `INSERT INTO order_files (order_id, name, size, content_type, sha256, storage_key, format, compression,
                            profile_status, rows, columns, preview, profiled_at, publication_id)
   SELECT order_id, 'products-' || lpad(n::text, 4, '0') || '.csv', size, content_type, sha256, storage_key, format,
          compression, profile_status, rows, columns, preview, profiled_at, publication_id
   FROM order_files, generate_series(1, $2::int - 1) AS n WHERE id = $1`,
  [first.id, partCount],
);
await pool.query(
  `INSERT INTO file_renditions (file_id, format, status, storage_key, size, sha256, version, stats)
   SELECT f.id, r.format, r.status, r.storage_key, r.size, r.sha256, r.version,
          jsonb_set(jsonb_set(r.stats, '{minValues,id}', to_jsonb(n * 1000)), '{maxValues,id}', to_jsonb(n * 1000 + 999))
   FROM order_files f
   JOIN file_renditions r ON r.file_id = $1 AND r.format = 'parquet'
   CROSS JOIN LATERAL (SELECT substring(f.name from 'products-(\\d+)')::int AS n) part
   WHERE f.order_id = $2 AND f.id <> $1`,
  [first.id, order.id],
);
await pool.query(`UPDATE table_versions SET rows = $2 WHERE publication_id = $1`, [
  made.rows[0]!.publication_id,
  partCount * 1000,
]);
const key = (await createBenchKeys(pool, [buyer.id])).get(buyer.id)!;
await pool.end();

const server = await startAppServer({
  databaseUrl,
  storageDir: process.env.STORAGE_DIR,
  env: { JOBS_WORKER: "off", RATE_LIMIT_EXEMPT_BUYERS: buyer.id },
});
const headers = { Authorization: `Bearer ${key}` };
const tablePath = `/api/delta-sharing/shares/orders/schemas/${order.id}/tables/${tableName}`;

/** One request's time in ms and its body; anything but 200 stops the run. */
async function timed(pathAndQuery: string, init: RequestInit = {}): Promise<{ ms: number; body: string }> {
  const started = performance.now();
  const response = await fetch(`${server.url}${pathAndQuery}`, { ...init, headers, redirect: "manual" });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${pathAndQuery} answered ${response.status}: ${body.slice(0, 200)}`);
  return { ms: performance.now() - started, body };
}

/** A hint that matches the statistics of part `n` only. */
const hintFor = (n: number) =>
  JSON.stringify({
    op: "equal",
    children: [
      { op: "column", name: "id", valueType: "long" },
      { op: "literal", value: String(n * 1000 + 500), valueType: "long" },
    ],
  });
const fileLines = (body: string) => body.split("\n").filter((line) => line.startsWith('{"file"')).length;

const requests = {
  baseline: () => timed(BASELINE(order.id, tableName)),
  listTables: () => timed(`/api/delta-sharing/shares/orders/schemas/${order.id}/tables?maxResults=1000`),
  query: () => timed(`${tablePath}/query`, { method: "POST", body: "{}" }),
  hinted: (n: number) =>
    timed(`${tablePath}/query`, { method: "POST", body: JSON.stringify({ jsonPredicateHints: hintFor(n) }) }),
};

const p50 = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const perRound: { baseline: number; listTables: number; query: number; hinted: number }[] = [];
const hintedLines = new Set<number>();
let queryLines = 0;
try {
  // Warm-up: both paths compiled and connected before anything is timed.
  for (let i = 0; i < 5; i++) {
    await Promise.all([requests.baseline(), requests.listTables(), requests.query(), requests.hinted(i)]);
  }
  queryLines = fileLines((await requests.query()).body);
  if (queryLines !== partCount) throw new Error(`The query answered ${queryLines} file lines, not ${partCount}`);
  for (let round_ = 0; round_ < rounds; round_++) {
    const times = {
      baseline: [] as number[],
      listTables: [] as number[],
      query: [] as number[],
      hinted: [] as number[],
    };
    for (let i = 0; i < samples; i++) {
      times.baseline.push((await requests.baseline()).ms);
      times.listTables.push((await requests.listTables()).ms);
      times.query.push((await requests.query()).ms);
      const hinted = await requests.hinted((round_ * samples + i) % partCount);
      hintedLines.add(fileLines(hinted.body));
      times.hinted.push(hinted.ms);
    }
    perRound.push({
      baseline: p50(times.baseline),
      listTables: p50(times.listTables),
      query: p50(times.query),
      hinted: p50(times.hinted),
    });
    const last = perRound.at(-1)!;
    log(
      `round ${round_ + 1}: baseline p50 ${round(last.baseline)} ms, list tables ${round(last.listTables)} ms, ` +
        `query ${round(last.query)} ms, hinted query ${round(last.hinted)} ms`,
    );
  }
} finally {
  await server.stop();
  await fs.rm(workDir, { recursive: true, force: true });
}
if (hintedLines.size !== 1 || !hintedLines.has(1)) {
  throw new Error(`A hinted query answered ${[...hintedLines].join(" or ")} file lines, not 1`);
}

const listRatio = spread(perRound.map((r) => r.listTables / r.baseline));
const queryRatio = spread(perRound.map((r) => r.query / r.baseline));
const ms = (values: number[]) => round(median(values));
await report(
  "delta-sharing",
  {
    parts: partCount,
    rounds,
    samples_per_round: samples,
    baseline: BASELINE(":order", ":table"),
    p50_ms: {
      baseline: ms(perRound.map((r) => r.baseline)),
      list_tables: ms(perRound.map((r) => r.listTables)),
      query: ms(perRound.map((r) => r.query)),
      hinted_query: ms(perRound.map((r) => r.hinted)),
    },
    query_file_lines: queryLines,
    hinted_query_file_lines: 1,
    query_vs_baseline: queryRatio,
    list_tables_vs_baseline: listRatio,
  },
  `Table of ${partCount} parts, ${rounds} interleaved rounds: query p50 ${ms(perRound.map((r) => r.query))} ms = ` +
    `${formatSpread(queryRatio)} of ${BASELINE(":order", ":table")} (${ms(perRound.map((r) => r.baseline))} ms); ` +
    `a jsonPredicateHints query matching one part: 1 file line, p50 ${ms(perRound.map((r) => r.hinted))} ms; ` +
    `list tables ${formatSpread(listRatio)}.`,
);
