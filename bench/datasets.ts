import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { datasetEngineSettings, readerSql, sqlString } from "../lib/engine/engine";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { readProfile } from "../lib/datasets/profile";
import { writeRendition } from "../lib/datasets/renditions";
import { hashStream } from "../lib/storage";
import pg from "pg";
import { disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/queue";
import { addOrderFile, createOrder } from "../lib/operator/orders";
import { createBuyer } from "../lib/buyers";
import { profileStoredFile } from "../lib/datasets/profile";
import {
  createBenchKeys,
  freshBenchDatabase,
  log,
  median,
  percentile,
  ratio,
  report,
  round,
  sampler,
  treeRssKb,
  startAppServer,
} from "./lib/common";
import { benchRounds, spread } from "./lib/interleaved";

/**
 * The data engine on a large CSV (BENCH_CSV_MB, default 1024), each figure against DuckDB itself
 * doing the least the figure needs, from this same process, interleaved (baseline, ours, baseline,
 * ours, ...; BENCH_ROUNDS rounds, default 3), reported as the median ratio with its spread:
 * - profile: `SELECT count(*) FROM read_csv(...)` against readProfile (columns, a count of every
 *   column's values in one scan, the first 100 rows), goal >= 0.8x;
 * - Parquet: `COPY (SELECT * FROM read_csv(...)) TO ... (FORMAT parquet)` against the rendition as
 *   the worker makes it (zstd Parquet, then hashed as the store does), goal >= 0.8x;
 * - the process's peak RSS while profiling and converting (DuckDB's memory_limit bounds it);
 * - over HTTP against the production server: a preview's latency against reading one order
 *   (`GET /api/v1/orders/{id}`), interleaved, p50 ratio, goal <= 2x (BENCH_ACCOUNTS accounts,
 *   default 50, so the 60/minute limit is never met).
 */
const csvMb = Number(process.env.BENCH_CSV_MB ?? 1024);
const rounds = benchRounds();
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-datasets-"));
process.env.DATASET_TEMP_DIR = path.join(workDir, "engine");

const csv = path.join(workDir, "large.csv");
log(`writing a ${csvMb} MB CSV`);
await pipeline(
  (async function* () {
    const rowsPerChunk = 20_000;
    let written = 0;
    let id = 0;
    yield "id,sku,name,price,quantity,listed_at,category,note\n";
    while (written < csvMb * 1024 * 1024) {
      const lines: string[] = [];
      for (let i = 0; i < rowsPerChunk; i++, id++) {
        const day = String((id % 28) + 1).padStart(2, "0");
        lines.push(
          `${id},SKU-${id % 100_000},"Product ${id}, deluxe",${(id % 10_000) / 100},${id % 500},2026-10-${day} 08:${String(id % 60).padStart(2, "0")}:00,cat-${id % 40},${id % 7 === 0 ? "" : `note ${id % 1000}`}`,
        );
      }
      const chunk = lines.join("\n") + "\n";
      written += chunk.length;
      yield chunk;
    }
  })(),
  createWriteStream(csv),
);
const csvBytes = (await fs.stat(csv)).size;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

const reader = readerSql(csv, "csv", null);
/** DuckDB alone, in this process, with the engine's memory limit and threads. */
async function withDuckDB(work: (connection: DuckDBConnection) => Promise<unknown>): Promise<void> {
  const { memoryLimit, threads } = datasetEngineSettings();
  const instance = await DuckDBInstance.create(":memory:", {
    memory_limit: memoryLimit,
    threads: String(threads),
    temp_directory: path.join(workDir, "baseline-spill"),
  });
  const connection = await instance.connect();
  try {
    await work(connection);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
const baselines = {
  count: () => withDuckDB((connection) => connection.run(`SELECT count(*) FROM ${reader}`)),
  copy: () =>
    withDuckDB((connection) =>
      connection.run(
        `COPY (SELECT * FROM ${reader}) TO ${sqlString(path.join(workDir, "plain.parquet"))} (FORMAT parquet)`,
      ),
    ),
};
const ours = {
  profile: () => readProfile(csv, "csv", null),
  parquet: async () => {
    const target = path.join(workDir, "rendition.parquet");
    await writeRendition(csv, { format: "csv", compression: null }, "parquet", target, workDir);
    await hashStream(createReadStream(target));
  },
};

// This process and its engine processes (ours run there; the baseline here).
const idleRssMb = treeRssKb(process.pid) / 1024;
const rss = sampler(() => treeRssKb(process.pid) / 1024, 50);
const seconds = { count: [] as number[], profile: [] as number[], copy: [] as number[], parquet: [] as number[] };
for (let round_ = 1; round_ <= rounds; round_++) {
  seconds.count.push(await timed(baselines.count));
  seconds.profile.push(await timed(ours.profile));
  seconds.copy.push(await timed(baselines.copy));
  seconds.parquet.push(await timed(ours.parquet));
  log(
    `round ${round_}: count ${round(seconds.count.at(-1)!)} s, profile ${round(seconds.profile.at(-1)!)} s, copy ${round(seconds.copy.at(-1)!)} s, parquet ${round(seconds.parquet.at(-1)!)} s`,
  );
}
const peakRssMb = Math.max(...rss.stop());
await closeEnginePool();

/** Baseline time over ours, per round (higher is better; 1 = as fast as DuckDB alone). */
const ratios = (baseline: number[], measured: number[]) => baseline.map((value, index) => value / measured[index]!);
const profileRatio = spread(ratios(seconds.count, seconds.profile));
const parquetRatio = spread(ratios(seconds.copy, seconds.parquet));
const parquetSize = (await fs.stat(path.join(workDir, "rendition.parquet"))).size;
const latency = await previewAgainstOrderRead();

await report(
  "datasets",
  {
    csv_bytes: csvBytes,
    rounds,
    seconds,
    profile_vs_count: profileRatio,
    parquet_vs_copy: parquetRatio,
    parquet_bytes: parquetSize,
    rss_mb: { idle: round(idleRssMb), peak: round(peakRssMb), growth: round(peakRssMb - idleRssMb) },
    memory_limit: process.env.DATASET_MEMORY_LIMIT ?? "256MB",
    http_ms: latency,
  },
  `${round(csvBytes / 1e9)} GB CSV, ${rounds} interleaved rounds: profile ${profileRatio.median}x of count(*) ` +
    `(${profileRatio.min}-${profileRatio.max}), Parquet rendition ${parquetRatio.median}x of COPY ` +
    `(${parquetRatio.min}-${parquetRatio.max}, ${ratio(parquetSize, csvBytes)} of the CSV's size); ` +
    `peak RSS ${round(peakRssMb)} MB (idle ${round(idleRssMb)} MB); preview p50 ${latency.preview.p50} ms = ` +
    `${latency.p50_ratio.median}x of an order read's ${latency.order.p50} ms (${latency.p50_ratio.min}-${latency.p50_ratio.max})`,
);
await fs.rm(workDir, { recursive: true, force: true });

/**
 * Preview against order read over HTTP: BENCH_ACCOUNTS buyers, each with one delivered order whose
 * CSV of 1,000 rows is profiled; per round every account reads its order once and previews its file
 * once (20 rows), one request at a time, the two kinds alternating.
 */
async function previewAgainstOrderRead() {
  const accounts = Number(process.env.BENCH_ACCOUNTS ?? 50);
  const databaseUrl = await freshBenchDatabase("dataset_access_bench_datasets");
  process.env.DATABASE_URL = databaseUrl;
  process.env.STORAGE_DIR = path.join(workDir, "storage");
  const rows = Array.from({ length: 1000 }, (_, i) => `${i},Product ${i},${i * 1.5},2026-10-01 08:00:00`);
  const content = Buffer.from(`id,name,price,listed_at\n${rows.join("\n")}\n`);
  const targets: { buyerId: string; orderId: string; fileId: string }[] = [];
  for (let i = 0; i < accounts; i++) {
    const buyer = await createBuyer(`bench-datasets-${i}@example.com`);
    const order = await createOrder({ buyerId: buyer.id, name: `Bench ${i}`, status: "delivered" });
    const { Readable } = await import("node:stream");
    const file = await addOrderFile({ orderId: order.id, name: "products.csv", source: Readable.from([content]) });
    await profileStoredFile(file.id, { queueRendition: false });
    targets.push({ buyerId: buyer.id, orderId: order.id, fileId: file.id });
  }
  await closeJobQueue();
  await disconnectDb();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const keys = await createBenchKeys(
    pool,
    targets.map(({ buyerId }) => buyerId),
  );
  await pool.end();
  const server = await startAppServer({
    databaseUrl,
    storageDir: process.env.STORAGE_DIR,
    env: { JOBS_WORKER: "off" },
  });
  const timedGet = async (pathAndQuery: string, key: string) => {
    const started = performance.now();
    const response = await fetch(`${server.url}/api/v1${pathAndQuery}`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${pathAndQuery} answered ${response.status}`);
    return performance.now() - started;
  };
  const order: number[][] = [];
  const preview: number[][] = [];
  try {
    for (const target of targets) await timedGet(`/orders/${target.orderId}`, keys.get(target.buyerId)!); // warm-up
    for (let round_ = 0; round_ < rounds; round_++) {
      const orderRound: number[] = [];
      const previewRound: number[] = [];
      for (const target of targets) {
        const key = keys.get(target.buyerId)!;
        orderRound.push(await timedGet(`/orders/${target.orderId}`, key));
        previewRound.push(await timedGet(`/orders/${target.orderId}/files/${target.fileId}/preview`, key));
      }
      order.push(orderRound.sort((a, b) => a - b));
      preview.push(previewRound.sort((a, b) => a - b));
    }
  } finally {
    await server.stop();
  }
  const p50s = (runs: number[][]) => runs.map((run) => percentile(run, 50));
  const ratios = p50s(preview).map((value, index) => value / p50s(order)[index]!);
  return {
    order: { p50: round(median(p50s(order))) },
    preview: { p50: round(median(p50s(preview))) },
    p50_ratio: spread(ratios),
  };
}
