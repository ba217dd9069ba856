import { createReadStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { datasetEngineSettings } from "../lib/engine/engine";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { deliveredOrderTables, tableOf, versionFiles } from "../lib/explore/files";
import { createOrder } from "../lib/operator/orders";
import { closeJobQueue } from "../lib/queue";
import { processPendingNow } from "../lib/tables/pipeline";
import { publishTable } from "../lib/tables/publish";
import {
  benchWorkspace,
  createBenchKeys,
  engineProcesses,
  log,
  median,
  report,
  requireProductionBuild,
  round,
  rssKb,
  sampler,
  startAppServer,
} from "./lib/common";
import { benchRounds, spread } from "./lib/interleaved";
import { buyersQuerying, probe } from "./lib/probe-load";
import { writeWideTableParts } from "./lib/wide-table";

/**
 * Issue 41's figures for explore (contract Part 7), each against its baseline in the same run,
 * interleaved (baseline, ours, baseline, ...), BENCH_ROUNDS rounds (default 3), medians:
 * 1. rows with a `where` matching 0.1% of the table (`bucket = N`), 3 columns, through
 *    `GET .../tables/{name}/rows`, against the same SELECT run by DuckDB in this process over the
 *    same Parquet files (the version's stored renditions), same threads and memory as the engine,
 *    DuckDB's defaults otherwise; and against DuckDB with the Parquet metadata cache the engine's
 *    kept instances have (what our layer itself adds);
 * 2. rows with `where id = N` (the key; the table is sorted by it) against `GET /api/v1/orders/{id}`,
 *    and against the same lookup run by DuckDB in this process, its metadata cache on (the floor
 *    under that goal);
 * 3. a GROUP BY over the whole table through `GET .../sql` against DuckDB, and the engine
 *    processes' RSS (from /proc) over their idle RSS;
 * 4. 20 buyers (own accounts, keys and orders of a table of --load-rows rows) querying at once for
 *    --seconds: `/api/health` and order reads' p99 against an idle server, idle and loaded phases
 *    interleaved.
 * Flags: --rows (default 10,000,000), --load-rows (100,000), --seconds (60); BENCH_EXPLORE_CALLS
 * calls per round (default 15). Every bench buyer is exempt from the rate limit
 * (RATE_LIMIT_EXEMPT_BUYERS): the figures are the engine's, not the limiter's.
 */
requireProductionBuild();
const { values: flags } = parseArgs({
  options: {
    rows: { type: "string", default: "10000000" },
    "load-rows": { type: "string", default: "100000" },
    seconds: { type: "string", default: "60" },
  },
});
const ROWS = Number(flags.rows);
const LOAD_ROWS = Number(flags["load-rows"]);
const SECONDS = Number(flags.seconds);
const LOAD_BUYERS = 20;
const CALLS = Number(process.env.BENCH_EXPLORE_CALLS ?? 15);
const GROUP_BY =
  "SELECT category, count(*) AS n, round(avg(price), 2) AS mean_price, sum(quantity) AS units FROM products GROUP BY category ORDER BY category";
const loadAverage = () => os.loadavg().map((value) => round(value, 2));

// The server's engine runs with the product's defaults; publishing 10 M keyed rows in this process
// gets more memory for the key check and the first change file (bench:quality: 256 MB is too little).
const serverMemory = process.env.DATASET_MEMORY_LIMIT ?? "256MB";
const { databaseUrl, workDir } = await benchWorkspace("explore", {
  DATASET_MEMORY_LIMIT: process.env.BENCH_EXPLORE_PUBLISH_MEMORY ?? "1GB",
});
const { threads } = datasetEngineSettings();
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const instance = await DuckDBInstance.create(":memory:", { threads: String(threads), memory_limit: serverMemory });
const duckdb = await instance.connect();
// DuckDB as the engine's kept instances run it: the Parquet footers read once, then cached.
const cachingInstance = await DuckDBInstance.create(":memory:", {
  threads: String(threads),
  memory_limit: serverMemory,
});
const cachingDuckdb = await cachingInstance.connect();
await cachingDuckdb.run("SET GLOBAL parquet_metadata_cache = true");

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { seconds: (performance.now() - started) / 1000, value };
}

let stopApp: (() => Promise<void>) | undefined;
try {
  log(`load average ${loadAverage().join(" ")}; writing ${ROWS} rows of 20 columns in 10 Parquet parts`);
  const mainParts = await writeWideTableParts(duckdb, await fs.mkdtemp(path.join(workDir, "main-")), ROWS, 10);
  const loadParts = await writeWideTableParts(duckdb, await fs.mkdtemp(path.join(workDir, "load-")), LOAD_ROWS, 1);
  const partsOf = (files: string[]) =>
    files.map((file) => ({
      name: path.basename(file),
      source: { path: file, open: () => createReadStream(file) },
    }));

  const buyer = await createBuyer("bench-explore@example.com");
  const order = await createOrder({ buyerId: buyer.id, name: "wide products", status: "delivered" });
  const published = await timed(async () => {
    await publishTable({ orderId: order.id, table: "products", key: ["id"], parts: partsOf(mainParts) });
    const loadOrders = [];
    for (let index = 0; index < LOAD_BUYERS; index++) {
      const loadBuyer = await createBuyer(`bench-explore-load-${index}@example.com`);
      const loadOrder = await createOrder({ buyerId: loadBuyer.id, name: `load ${index}`, status: "delivered" });
      await publishTable({ orderId: loadOrder.id, table: "products", key: ["id"], parts: partsOf(loadParts) });
      loadOrders.push({ buyerId: loadBuyer.id, orderId: loadOrder.id });
    }
    await processPendingNow();
    return loadOrders;
  });
  const loadOrders = published.value;
  log(`published in ${round(published.seconds, 1)} s`);
  await closeEnginePool();
  const { files } = await versionFiles(
    tableOf(await deliveredOrderTables(buyer.id, order.id), order.id, "products"),
    1,
  );
  if (files.length !== 10) throw new Error(`the version has ${files.length} parts, not 10`);
  for (const connection of [duckdb, cachingDuckdb]) {
    await connection.run(
      `CREATE VIEW products AS SELECT * FROM read_parquet([${files.map((file) => `'${file.path}'`).join(", ")}])`,
    );
  }

  const keys = await createBenchKeys(pool, [buyer.id, ...loadOrders.map((one) => one.buyerId)]);
  const key = keys.get(buyer.id)!;
  const app = await startAppServer({
    databaseUrl,
    storageDir: process.env.STORAGE_DIR!,
    env: {
      RATE_LIMIT_EXEMPT_BUYERS: [...keys.keys()].join(","),
      JOBS_WORKER: "off",
      DATASET_MEMORY_LIMIT: serverMemory,
    },
  });
  stopApp = app.stop;
  const auth = { Authorization: `Bearer ${key}` };
  const getJson = async (target: string, headers: Record<string, string> = auth) => {
    const response = await fetch(app.url + target, { headers });
    const body = await response.text();
    if (!response.ok) throw new Error(`${target}: HTTP ${response.status}: ${body.slice(0, 300)}`);
    return JSON.parse(body) as { rows: unknown[][] };
  };
  const rowsPath = (orderId: string, where: string) =>
    `/api/v1/orders/${orderId}/tables/products/rows?columns=id,name,price&where=${encodeURIComponent(where)}&limit=100`;
  const sqlPath = (orderId: string) => `/api/v1/orders/${orderId}/sql?q=${encodeURIComponent(GROUP_BY)}&limit=100`;
  const duckdbRows = async (sql: string) => (await duckdb.runAndReadAll(sql)).getRowsJson();
  const cachingDuckdbRows = async (sql: string) => (await cachingDuckdb.runAndReadAll(sql)).getRowsJson();
  const same = (ours: unknown[][], theirs: unknown[][], what: string) => {
    if (ours.length !== theirs.length || String(ours[0]?.[0]) !== String(theirs[0]?.[0]))
      throw new Error(`${what}: the API answered ${ours.length} rows, DuckDB ${theirs.length}`);
  };

  /** `rounds` interleaved rounds of CALLS calls of each side; each round's p50s and its ratio. */
  async function compare(
    label: string,
    baseline: (call: number) => Promise<unknown>,
    ours: (call: number) => Promise<unknown>,
  ) {
    for (let call = 0; call < 3; call++) await Promise.all([baseline(call), ours(call)]);
    const runs: { baseline: number; ours: number; load: number }[] = [];
    for (let index = 0; index < benchRounds(); index++) {
      const times = { baseline: [] as number[], ours: [] as number[] };
      for (let call = 0; call < CALLS; call++) {
        times.baseline.push((await timed(() => baseline(call))).seconds);
        times.ours.push((await timed(() => ours(call))).seconds);
      }
      const run = { baseline: median(times.baseline), ours: median(times.ours), load: os.loadavg()[0]! };
      log(
        `${label} round ${index + 1}: ours p50 ${round(run.ours * 1000, 1)} ms, baseline ${round(run.baseline * 1000, 1)} ms (load ${round(run.load, 2)})`,
      );
      runs.push(run);
    }
    return {
      ours_p50_ms: round(median(runs.map((run) => run.ours)) * 1000, 1),
      baseline_p50_ms: round(median(runs.map((run) => run.baseline)) * 1000, 1),
      ratio: spread(runs.map((run) => run.ours / run.baseline)),
      load_average: runs.map((run) => round(run.load, 2)),
    };
  }

  const bucketOf = (call: number) => (call * 37) % 1000;
  const filterSql = (call: number) =>
    `SELECT id, name, price FROM products WHERE bucket = ${bucketOf(call)} ORDER BY id LIMIT 101`;
  // Both sides answer the same rows (checked once, outside the timed calls).
  same((await getJson(rowsPath(order.id, "bucket = 0"))).rows, (await duckdbRows(filterSql(0))).slice(0, 100), "where");
  same((await getJson(sqlPath(order.id))).rows, await duckdbRows(GROUP_BY), "GROUP BY");
  const bucketPage = async (call: number) => getJson(rowsPath(order.id, `bucket = ${bucketOf(call)}`));
  const filter = await compare("where bucket (0.1%)", async (call) => duckdbRows(filterSql(call)), bucketPage);
  // Our layer's own cost: against DuckDB with the footer cache our engine has (the goal's DuckDB has its defaults).
  const filterCached = await compare(
    "where bucket (0.1%) vs DuckDB with its metadata cache",
    async (call) => cachingDuckdbRows(filterSql(call)),
    bucketPage,
  );

  const idOf = (call: number) => 1 + ((call * 7_919_003) % ROWS);
  const keyPage = async (call: number) => {
    const page = await getJson(rowsPath(order.id, `id = ${idOf(call)}`));
    if (page.rows.length !== 1) throw new Error(`where id: ${page.rows.length} rows`);
  };
  const keyLookup = await compare("where id (key)", async () => getJson(`/api/v1/orders/${order.id}`), keyPage);
  // The floor under the goal: the same lookup run by DuckDB itself over the same files, footers cached.
  const keyInDuckdb = await compare(
    "where id (key) vs DuckDB with its metadata cache",
    async (call) =>
      cachingDuckdbRows(`SELECT id, name, price FROM products WHERE id = ${idOf(call)} ORDER BY id LIMIT 101`),
    keyPage,
  );

  // The engine processes' RSS: idle before each API call, sampled every 50 ms during it (the
  // processes are found before the call: scanning /proc in every sample would cost the engine CPU).
  const rssOver: number[] = [];
  const groupBy = await compare(
    "GROUP BY",
    async () => duckdbRows(GROUP_BY),
    async () => {
      const pids = engineProcesses(app.pid);
      const engineRssKb = () => pids.reduce((sum, pid) => sum + rssKb(pid), 0);
      const idle = engineRssKb();
      const memory = sampler(engineRssKb, 50);
      await getJson(sqlPath(order.id));
      rssOver.push((Math.max(...memory.stop()) - idle) / 1024);
    },
  );
  const rss = spread(rssOver, 0);

  // Idle and loaded phases interleaved; the probe is the main buyer reading its order.
  const loadBuyers = loadOrders.map((one, index) => ({
    key: keys.get(one.buyerId)!,
    paths: [rowsPath(one.orderId, `bucket = ${(index * 53) % 1000}`), sqlPath(one.orderId)],
  }));
  const phases: {
    idle: Awaited<ReturnType<typeof probe>>;
    loaded: Awaited<ReturnType<typeof probe>>;
    load: number[];
  }[] = [];
  const answers: Record<string, number> = {};
  for (let index = 0; index < benchRounds(); index++) {
    const idle = await probe(app.url, `/api/v1/orders/${order.id}`, key, SECONDS);
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const querying = buyersQuerying(app.url, loadBuyers, stopped);
    const loaded = await probe(app.url, `/api/v1/orders/${order.id}`, key, SECONDS);
    stop();
    for (const [status, count] of Object.entries(await querying)) answers[status] = (answers[status] ?? 0) + count;
    phases.push({ idle, loaded, load: loadAverage() });
    log(
      `load round ${index + 1}: health p99 ${idle.health.p99} -> ${loaded.health.p99} ms, order p99 ${idle.order.p99} -> ${loaded.order.p99} ms (load ${loadAverage().join(" ")})`,
    );
  }
  const healthP99 = spread(phases.map((phase) => phase.loaded.health.p99 / phase.idle.health.p99));
  const orderP99 = spread(phases.map((phase) => phase.loaded.order.p99 / phase.idle.order.p99));

  await report(
    "explore",
    {
      rows: ROWS,
      load_rows: LOAD_ROWS,
      load_seconds: SECONDS,
      rounds: benchRounds(),
      calls_per_round: CALLS,
      engine_threads: threads,
      engine_memory_limit: serverMemory,
      publish_seconds: round(published.seconds, 1),
      where_bucket_vs_duckdb: { ...filter, goal: 1.5 },
      where_bucket_vs_duckdb_metadata_cache: filterCached,
      where_key_vs_order_read: { ...keyLookup, goal: 2 },
      where_key_vs_duckdb_metadata_cache: keyInDuckdb,
      group_by_vs_duckdb: { ...groupBy, goal: 1.3 },
      group_by_engine_rss_over_idle_mb: { ...rss, goal: 512 },
      under_load: {
        buyers: LOAD_BUYERS,
        health_p99_loaded_to_idle: healthP99,
        order_p99_loaded_to_idle: orderP99,
        phases,
        answers,
        goal: 2,
      },
      load_average_at_end: loadAverage(),
    },
    [
      `explore over ${ROWS} rows (load average ${loadAverage().join(" ")}):`,
      `where 0.1%: ${filter.ratio.median}x DuckDB (${filter.ratio.min}-${filter.ratio.max}; goal 1.5x); ${filterCached.ratio.median}x DuckDB with its metadata cache`,
      `where key: ${keyLookup.ratio.median}x an order read (${keyLookup.ratio.min}-${keyLookup.ratio.max}; goal 2x); DuckDB with its metadata cache ${keyInDuckdb.baseline_p50_ms} ms, ours ${keyInDuckdb.ratio.median}x it`,
      `GROUP BY: ${groupBy.ratio.median}x DuckDB (${groupBy.ratio.min}-${groupBy.ratio.max}; goal 1.3x), engine RSS +${rss.median} MB (max +${rss.max}; goal +512)`,
      `${LOAD_BUYERS} buyers: health p99 ${healthP99.median}x idle (${healthP99.min}-${healthP99.max}), order p99 ${orderP99.median}x (${orderP99.min}-${orderP99.max}); goal 2x`,
    ].join("\n"),
  );
} finally {
  await stopApp?.();
  duckdb.closeSync();
  instance.closeSync();
  cachingDuckdb.closeSync();
  cachingInstance.closeSync();
  await pool.end();
  await closeJobQueue();
  await disconnectDb();
  await fs.rm(workDir, { recursive: true, force: true });
}
