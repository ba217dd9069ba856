import { spawn, type ChildProcess } from "node:child_process";
import { createReadStream, promises as fs } from "node:fs";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { createBuyer } from "../lib/buyers";
import { db, disconnectDb } from "../lib/db/client";
import { closeEnginePool } from "../lib/engine/engine-pool";
import type { VersionFigures } from "../lib/engine/quality-figures";
import { closeJobQueue } from "../lib/queue";
import { createOrder } from "../lib/operator/orders";
import { publishTable } from "../lib/tables/publish";
import { measurePublication } from "../lib/tables/quality";
import { benchRounds, spread } from "./lib/interleaved";
import { benchWorkspace, log, report, round, sampler, sleep, treeRssKb, npmScriptArgs } from "./lib/common";

/**
 * The quality report's cost (contract Part 6), rounds interleaved (off, on, ...; BENCH_ROUNDS):
 * (a) a keyed snapshot of BENCH_QUALITY_MB (default 1024) MB of CSV (BENCH_QUALITY_FORMAT=parquet:
 *     of Parquet) in 10 parts, published as the next version (every 10th row's price changed) by the job worker with the checks on, against
 *     the same with TABLE_QUALITY_CHECKS=off; goal within 1.1x; (c) the worker's peak RSS (with its
 *     engine processes) during each, goal within 1.1x;
 * (b) the report's own time (the quality engine task) for version 2 of a table of
 *     BENCH_QUALITY_BIG_ROWS (default 10,000,000) rows and of one of 1,000 rows, both appending
 *     1,000 rows: it reads only the new parts and the stored figures, so goal within 1.2x.
 */
const megabytes = Number(process.env.BENCH_QUALITY_MB ?? 1024);
/** The snapshot's parts as a seller uploads them: CSV (made Parquet by the pipeline) or Parquet. */
const snapshotFormat = process.env.BENCH_QUALITY_FORMAT === "parquet" ? "parquet" : "csv";
const bigRows = Number(process.env.BENCH_QUALITY_BIG_ROWS ?? 10_000_000);
const rounds = benchRounds();
const { workDir, env } = await benchWorkspace("quality", {
  STORAGE_DRIVER: "local",
  KEY_LIFECYCLE_CRON: "0 0 1 1 *",
});

/** Writes `parts` Parquet files of `rows` rows in all, ids from 0; `changed` alters every 10th price. */
async function writeParts(
  name: string,
  rows: number,
  parts: number,
  changed = false,
  format: "csv" | "parquet" = "parquet",
): Promise<string[]> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const files = [];
  const per = Math.ceil(rows / parts);
  for (let part = 0; part < parts; part++) {
    const file = path.join(workDir, `${name}-${part}.${format}`);
    const from = part * per;
    await connection.run(`COPY (SELECT range AS id, 'SKU-' || range AS sku, 'Product ' || range || ', deluxe' AS name,
      (range % 10000) / 100 ${changed ? "+ CASE WHEN range % 10 = 0 THEN 1 ELSE 0 END" : ""} AS price,
      range % 500 AS quantity, TIMESTAMP '2026-10-01' + INTERVAL (range % 28) DAY AS listed_at,
      'cat-' || (range % 40) AS category, CASE WHEN range % 7 = 0 THEN NULL ELSE 'note ' || (range % 1000) END AS note
      FROM range(${from}, ${Math.min(rows, from + per)})) TO '${file}' (FORMAT ${format})`);
    files.push(file);
  }
  connection.closeSync();
  instance.closeSync();
  return files;
}

/** Rows per MB of this Parquet, measured on a sample, so the parts come to about BENCH_QUALITY_MB. */
async function rowsFor(mb: number): Promise<number> {
  const [sample] = await writeParts("sample", 1_000_000, 1, false, snapshotFormat);
  const { size } = await fs.stat(sample!);
  return Math.round((1_000_000 * mb * 1024 * 1024) / size);
}

/** Workers still running end with the bench, also when it fails (another run would share their database). */
const workers = new Set<ChildProcess>();
process.on("exit", () => workers.forEach((child) => child.kill("SIGTERM")));

async function startWorker(checks: "on" | "off"): Promise<ChildProcess> {
  const child = spawn(process.execPath, npmScriptArgs("worker"), {
    env: { ...env, TABLE_QUALITY_CHECKS: checks },
    stdio: ["ignore", "pipe", "pipe"],
  });
  workers.add(child);
  child.once("exit", () => workers.delete(child));
  let output = "";
  child.stdout!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  child.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  for (let waited = 0; !output.includes("Job worker started"); waited += 100) {
    if (child.exitCode !== null || waited > 120_000) throw new Error(`The worker did not start:\n${output}`);
    await sleep(100);
  }
  return child;
}

async function stopWorker(child: ChildProcess) {
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
}

async function versionMade(publicationId: string): Promise<void> {
  for (;;) {
    const { status, error } = await db().tablePublication.findUniqueOrThrow({ where: { id: publicationId } });
    if (status === "ready") return;
    if (status === "failed" || status === "held") throw new Error(`publication ${status}: ${error}`);
    await sleep(100);
  }
}

const buyer = await createBuyer("bench-quality@example.com");
const order = await createOrder({ buyerId: buyer.id, name: "Quality bench", status: "delivered" });

/** Part names are unique in an order: each publication's carry its number. */
let publications = 0;
async function publish(table: string, files: string[], mode: "snapshot" | "append" = "snapshot") {
  const number = ++publications;
  const published = await publishTable({
    orderId: order.id,
    table,
    mode,
    key: ["id"],
    parts: files.map((file) => ({
      name: `${table}-${number}-${path.basename(file)}`,
      source: { stream: createReadStream(file) },
    })),
  });
  await versionMade(published.publication);
  return published.publication;
}

const rowsInAll = await rowsFor(megabytes);
log(`writing ${megabytes} MB of ${snapshotFormat} in 10 parts (${rowsInAll} rows), twice`);
const first = await writeParts("v1", rowsInAll, 10, false, snapshotFormat);
const second = await writeParts("v2", rowsInAll, 10, true, snapshotFormat);

/**
 * (a), (c): one table, its version 1 made first (checks on, so it has figures); then each round
 * publishes a new keyed snapshot with the checks off and one with them on, the content alternating
 * (`second`, `first`: every 10th price changed each time, so each is a version of 10% updates),
 * timed from publishing to the version, with the worker's peak RSS. Seven 1 GB publications in
 * three rounds, where a fresh table per measurement would take twelve.
 */
const TABLE = "products";
{
  const worker = await startWorker("on");
  await publish(TABLE, first);
  await stopWorker(worker);
}
async function nextVersion(checks: "on" | "off", files: string[]) {
  const worker = await startWorker(checks);
  const rss = sampler(() => treeRssKb(worker.pid!) / 1024, 100);
  const started = performance.now();
  await publish(TABLE, files);
  const seconds = (performance.now() - started) / 1000;
  const peak = Math.max(...rss.stop());
  await stopWorker(worker);
  return { seconds, peak };
}

const runs = { off: [] as { seconds: number; peak: number }[], on: [] as { seconds: number; peak: number }[] };
for (let r = 1; r <= rounds; r++) {
  runs.off.push(await nextVersion("off", second));
  runs.on.push(await nextVersion("on", first));
  log(`round ${r}: off ${round(runs.off.at(-1)!.seconds)} s, on ${round(runs.on.at(-1)!.seconds)} s`);
}
const timeRatio = spread(runs.on.map((run, i) => run.seconds / runs.off[i]!.seconds));
const rssRatio = spread(runs.on.map((run, i) => run.peak / runs.off[i]!.peak));

log(`report time: version 2 of ${bigRows} rows and of 1,000 rows, each appending 1,000 rows`);
const worker = await startWorker("on");
const figuresOf = async (publicationId: string) =>
  (await db().tablePublication.findUniqueOrThrow({ where: { id: publicationId } })).figures as VersionFigures;
const bigFigures = await figuresOf(await publish("big", await writeParts("big", bigRows, 10), "append"));
const smallFigures = await figuresOf(await publish("small", await writeParts("small", 1000, 1), "append"));
const added = await publish("added", await writeParts("added", 1000, 1), "append");
await stopWorker(worker);
const addedParts = await db().orderFile.findMany({
  where: { publicationId: added },
  select: { renditions: { where: { format: "parquet" }, select: { storageKey: true } } },
});
// One unmeasured run first: the first task also starts the engine process.
await measurePublication(addedParts, smallFigures);
const reportSeconds = { big: [] as number[], small: [] as number[] };
for (let r = 0; r < rounds; r++) {
  for (const [side, figures] of [
    ["small", smallFigures],
    ["big", bigFigures],
  ] as const) {
    const started = performance.now();
    const measured = await measurePublication(addedParts, figures);
    if ("error" in measured) throw new Error(measured.error);
    reportSeconds[side].push((performance.now() - started) / 1000);
  }
}
const reportRatio = spread(reportSeconds.big.map((seconds, i) => seconds / reportSeconds.small[i]!));

await closeEnginePool();
await closeJobQueue();
await disconnectDb();
await report(
  "quality",
  {
    snapshot_megabytes: megabytes,
    snapshot_format: snapshotFormat,
    rows: rowsInAll,
    rounds,
    next_version_seconds: {
      off: runs.off.map((run) => round(run.seconds)),
      on: runs.on.map((run) => round(run.seconds)),
    },
    checks_on_vs_off: timeRatio,
    worker_peak_rss_mb: { off: runs.off.map((run) => round(run.peak)), on: runs.on.map((run) => round(run.peak)) },
    rss_on_vs_off: rssRatio,
    report_seconds: reportSeconds,
    big_rows: bigRows,
    report_big_vs_small: reportRatio,
  },
  `a new version of a ${megabytes} MB keyed snapshot: checks on ${timeRatio.median}x the time of off ` +
    `(${timeRatio.min}-${timeRatio.max}), worker peak RSS ${rssRatio.median}x; report of 1,000 new rows after ` +
    `${bigRows} rows ${reportRatio.median}x the time after 1,000 rows`,
);
await fs.rm(workDir, { recursive: true, force: true });
