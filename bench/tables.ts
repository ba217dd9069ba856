import { spawn, type ChildProcess } from "node:child_process";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { DuckDBInstance } from "@duckdb/node-api";
import { createBuyer } from "../lib/buyers";
import { datasetEngineSettings } from "../lib/engine/engine";
import { db, disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/queue";
import { createOrder } from "../lib/operator/orders";
import { publishTable } from "../lib/tables/publish";
import { benchRounds, spread } from "./lib/interleaved";
import { writeProductParts } from "./lib/product-parts";
import { benchWorkspace, log, report, round, run, sampler, sleep, treeRssKb, npmScriptArgs } from "./lib/common";

/**
 * Publishing a table version (contract Part 4) with the job worker running on its own (`npm run
 * worker`), against the same steps done by hand in the same run, interleaved (hand, ours, ...;
 * BENCH_ROUNDS rounds):
 * - a keyed snapshot of BENCH_TABLE_MB (default 1024) MB of CSV in 10 parts: ours from `publishTable`
 *   (stored, profiled, Parquet renditions, key checked, change file, version made) to the version
 *   being made; by hand: `cp` of the parts with `sha256sum`, DuckDB's own
 *   `COPY (SELECT * FROM read_csv([parts])) TO ... (FORMAT parquet)` and a
 *   `GROUP BY key HAVING count(*) > 1` over it. Goal: within 1.3x. The worker's peak RSS (with its
 *   engine processes) is reported.
 * - one long-lived worker making BENCH_SMALL_VERSIONS (default 1,000) small versions of one table:
 *   its RSS (with its engine processes) at the end against after the first ten. Goal: within 512 MB.
 */
const megabytes = Number(process.env.BENCH_TABLE_MB ?? 1024);
const smallVersions = Number(process.env.BENCH_SMALL_VERSIONS ?? 1000);
const rounds = benchRounds();
const { workDir, env } = await benchWorkspace("tables", {
  STORAGE_DRIVER: "local",
  KEY_LIFECYCLE_CRON: "0 0 1 1 *",
});

log(`writing ${megabytes} MB of CSV in 10 parts`);
const parts = await writeProductParts(workDir, megabytes);

/** The job worker as operators run it on its own, with its engine processes. */
async function startWorker(): Promise<ChildProcess> {
  const child = spawn(process.execPath, npmScriptArgs("worker"), {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  // BENCH_WORKER_LOG=FILE keeps the worker's whole log (each job's end, timed) for a look at where the time goes.
  const kept = process.env.BENCH_WORKER_LOG ? createWriteStream(process.env.BENCH_WORKER_LOG) : undefined;
  child.stdout!.on("data", (chunk) => {
    output = (output + chunk).slice(-20_000);
    kept?.write(chunk);
  });
  child.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  for (let waited = 0; !output.includes("Job worker started"); waited += 100) {
    if (child.exitCode !== null || waited > 120_000) throw new Error(`The worker did not start:\n${output}`);
    await sleep(100);
  }
  return child;
}

async function versionMade(publicationId: string): Promise<void> {
  for (;;) {
    const { status, error } = await db().tablePublication.findUniqueOrThrow({
      where: { id: publicationId },
      select: { status: true, error: true },
    });
    if (status === "ready") return;
    if (status === "failed") throw new Error(`publication failed: ${error}`);
    await sleep(100);
  }
}

// The engine's threads; DuckDB's own memory limit (80% of the machine's): with the engine's 256 MB, one COPY of
// 1 GB of CSV in ten files runs out of memory keeping their rows in order.
const { threads } = datasetEngineSettings();
async function byHand(round: number): Promise<number> {
  const started = performance.now();
  const copies = path.join(workDir, `hand-${round}`);
  await fs.mkdir(copies);
  const copied = await run("cp", [...parts, copies]);
  if (copied.code !== 0) throw new Error("cp failed");
  const hashed = await run(
    "sha256sum",
    parts.map((part) => path.join(copies, path.basename(part))),
  );
  if (hashed.code !== 0) throw new Error("sha256sum failed");
  const instance = await DuckDBInstance.create(":memory:", {
    threads: String(threads),
    temp_directory: path.join(workDir, "hand-spill"),
  });
  const connection = await instance.connect();
  const parquet = path.join(copies, "products.parquet");
  await connection.run(
    `COPY (SELECT * FROM read_csv([${parts.map((part) => `'${path.join(copies, path.basename(part))}'`).join(", ")}])) TO '${parquet}' (FORMAT parquet)`,
  );
  const duplicates = await connection.runAndReadAll(
    `SELECT id, count(*) FROM read_parquet('${parquet}') GROUP BY id HAVING count(*) > 1`,
  );
  if (duplicates.getRowsJson().length !== 0) throw new Error("the parts' ids are not unique");
  connection.closeSync();
  instance.closeSync();
  const seconds = (performance.now() - started) / 1000;
  await fs.rm(copies, { recursive: true, force: true });
  return seconds;
}

const buyer = await createBuyer("bench-tables@example.com");
const order = await createOrder({ buyerId: buyer.id, name: "Tables bench", status: "delivered" });
const worker = await startWorker();
const idleMb = treeRssKb(worker.pid!) / 1024;

async function ours(round: number): Promise<number> {
  const started = performance.now();
  const published = await publishTable({
    orderId: order.id,
    table: `products_${round}`,
    key: ["id"],
    parts: parts.map((file) => ({
      name: `round-${round}-${path.basename(file)}`,
      source: { path: file, open: () => createReadStream(file) },
    })),
  });
  await versionMade(published.publication);
  return (performance.now() - started) / 1000;
}

log(`publishing a keyed snapshot of ${megabytes} MB in 10 parts, ${rounds} interleaved rounds`);
const rss = sampler(() => treeRssKb(worker.pid!) / 1024, 200);
const seconds = { hand: [] as number[], ours: [] as number[] };
for (let r = 1; r <= rounds; r++) {
  seconds.hand.push(await byHand(r));
  seconds.ours.push(await ours(r));
  log(`round ${r}: by hand ${round(seconds.hand.at(-1)!)} s, ours ${round(seconds.ours.at(-1)!)} s`);
}
const publishPeakMb = Math.max(...rss.stop());
const publishRatio = spread(seconds.ours.map((value, i) => value / seconds.hand[i]!));

log(`making ${smallVersions} small versions of one table with the same worker`);
let afterTen = 0;
const smallStarted = performance.now();
const publications: string[] = [];
for (let n = 1; n <= smallVersions; n++) {
  const rows = Array.from({ length: 20 }, (_, i) => `${i},item ${i},${(n * i) % 97}`).join("\n");
  const published = await publishTable({
    orderId: order.id,
    table: "small",
    key: n === 1 ? ["id"] : undefined,
    parts: [{ name: `small-v${n}.csv`, source: { stream: Readable.from([`id,name,price\n${rows}\n`]) } }],
  });
  publications.push(published.publication);
  if (n === 10) {
    for (const publication of publications) await versionMade(publication);
    afterTen = treeRssKb(worker.pid!) / 1024;
  }
}
for (const publication of publications) await versionMade(publication);
const smallSeconds = (performance.now() - smallStarted) / 1000;
await sleep(1_000);
const atEnd = treeRssKb(worker.pid!) / 1024;

worker.kill("SIGTERM");
await closeJobQueue();
await disconnectDb();
await report(
  "tables",
  {
    csv_megabytes: megabytes,
    rounds,
    seconds,
    publish_vs_by_hand: publishRatio,
    worker_rss_mb: { idle: round(idleMb), peak_while_publishing: round(publishPeakMb) },
    small_versions: {
      count: smallVersions,
      seconds: round(smallSeconds),
      rss_after_ten_mb: round(afterTen),
      rss_at_end_mb: round(atEnd),
      growth_mb: round(atEnd - afterTen),
    },
  },
  `keyed snapshot of ${megabytes} MB in 10 parts: ${publishRatio.median}x the time of the same steps by hand ` +
    `(${publishRatio.min}-${publishRatio.max}), worker peak RSS ${round(publishPeakMb)} MB (idle ${round(idleMb)} MB); ` +
    `${smallVersions} small versions in ${round(smallSeconds)} s, worker RSS ${round(afterTen)} MB after ten, ` +
    `${round(atEnd)} MB at the end (${round(atEnd - afterTen)} MB more)`,
);
await fs.rm(workDir, { recursive: true, force: true });
