import { spawn } from "node:child_process";
import { createReadStream, promises as fs, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { createOrder } from "../lib/operator/orders";
import { closeJobQueue } from "../lib/queue";
import { processPendingNow } from "../lib/tables/pipeline";
import { publishTable } from "../lib/tables/publish";
import {
  benchWorkspace,
  commandLine,
  createBenchKeys,
  descendants,
  engineCpuOver,
  log,
  npmScriptArgs,
  requireProductionBuild,
  round,
  rssKb,
  sampler,
  sleep,
  startAppServer,
} from "./lib/common";
import { latencyFigures } from "./lib/probe-load";
import {
  addTally,
  hostileLoop,
  ordinaryLoop,
  orderReads,
  type OrdinaryAccount,
  type Phase,
  type Tally,
} from "./lib/tenant-clients";
import { reportTenants, type PhaseResult, type RoundResult } from "./lib/tenant-report";
import { writeWideTableParts } from "./lib/wide-table";
import { startWorkerProcess, stopWorkerProcess } from "./lib/worker-process";

/**
 * Contract Part 8's proof (issue 53): can one account slow or stop the others' queries while staying
 * inside its 60 requests a minute? `--rounds` (3) interleaved rounds of a quiet phase (5 ordinary accounts
 * and an order reader) and a loaded phase (the same, plus one hostile account), `--seconds` (20) each,
 * against the production server (JOBS_WORKER=off) and a job worker in a process of its own, over a keyed
 * table of `--rows` (1,000,000) rows of 20 columns that every account has in its own order.
 * - Ordinary accounts, closed loops, a new request at most once a second each: a key lookup on /rows, a
 *   GROUP BY on /sql, a subset of 1,000 rows (asked, then asked again every 0.5 s until its 302).
 * - Order reads (`GET /api/v1/orders/{id}`) by a sixth ordinary account, one at a time, 20 a second at most.
 * - The hostile account: one request a second (60 a minute, paced here, not exempt from the limiter): a 10 s
 *   CPU query on /sql, an answer just under 8 MiB read at 2 KB/s, the same CPU query hung up on after 1 s,
 *   a subset of the whole table, in turn.
 * The ordinary accounts are exempt from the rate limit (RATE_LIMIT_EXEMPT_BUYERS, as bench:explore's) so
 * that their subset polls never meet it: a 429 they get is the engine's admission. Per round: their
 * answers that are not 200/202/302, their 429s, their p99s loaded over quiet, order reads' p99 loaded over
 * quiet, the server's RSS (its processes but the engine's) over idle, each account's kept subsets, and the
 * query engine's CPU 2 s after the last client left (then the bench waits, at most `--drain-seconds`
 * (120), for the engines and subset jobs to finish before the next quiet phase).
 */
requireProductionBuild();
const { values: flags } = parseArgs({
  options: {
    rows: { type: "string", default: "1000000" },
    seconds: { type: "string", default: "20" },
    rounds: { type: "string", default: "3" },
    "drain-seconds": { type: "string", default: "120" },
  },
});
const ROWS = Number(flags.rows);
const SECONDS = Number(flags.seconds);
const ROUNDS = Number(flags.rounds);
const DRAIN_SECONDS = Number(flags["drain-seconds"]);
for (const [name, value] of Object.entries({ ROWS, SECONDS, ROUNDS, DRAIN_SECONDS }))
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name.toLowerCase()} must be a whole number >= 1`);
const ORDINARY_ACCOUNTS = 5;
const ORDINARY_PACE_MS = 1_000;
const ORDER_READ_PACE_MS = 50;
const HOSTILE_INTERVAL_MS = 60_000 / 60;
/** Answers in flight when a phase ends get this long before their clients give up. */
const PHASE_GRACE_MS = 30_000;
const SUBSET_QUOTA_BYTES = Number(process.env.SUBSET_QUOTA_BYTES ?? 10 * 2 ** 30);
const GROUP_BY =
  "SELECT category, count(*) AS n, round(avg(price), 2) AS mean_price, sum(quantity) AS units FROM products GROUP BY category ORDER BY category";
/** 300 rows of cells of 1,000 characters (about 1,003 bytes of JSON each): as many columns as fit in 8 MiB. */
const WIDE_COLUMNS = Math.floor((8 * 2 ** 20 - 64 * 2 ** 10) / (300 * 1003));
const WIDE_SQL = `WITH x AS (SELECT repeat('x', 1000) s FROM range(300)) SELECT ${Array.from(
  { length: WIDE_COLUMNS },
  (_, index) => `s AS c${index + 1}`,
).join(", ")} FROM x`;

const serverMemory = process.env.DATASET_MEMORY_LIMIT ?? "256MB";
const loadAtStart = os.loadavg().map((value) => round(value, 2));
const { databaseUrl, workDir } = await benchWorkspace("tenants", { DATASET_MEMORY_LIMIT: "1GB" });
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const metricsToken = `bench-metrics-${process.pid}`;
let stopApp: (() => Promise<void>) | undefined;
let worker: ReturnType<typeof spawn> | undefined;
process.once("exit", () => worker?.kill("SIGKILL"));
try {
  log(`writing ${ROWS} rows of 20 columns; publishing them in ${ORDINARY_ACCOUNTS + 1} accounts' orders`);
  const instance = await DuckDBInstance.create(":memory:");
  const duckdb = await instance.connect();
  const parts = await writeWideTableParts(duckdb, await fs.mkdtemp(path.join(workDir, "parts-")), ROWS, 4);
  duckdb.closeSync();
  instance.closeSync();
  const publishedIn = async (email: string) => {
    const buyer = await createBuyer(email);
    const order = await createOrder({ buyerId: buyer.id, name: email, status: "delivered" });
    const partsOf = parts.map((file) => ({
      name: path.basename(file),
      source: { path: file, open: () => createReadStream(file) },
    }));
    await publishTable({ orderId: order.id, table: "products", key: ["id"], parts: partsOf });
    return { buyerId: buyer.id, orderId: order.id };
  };
  const started = performance.now();
  const hostile = await publishedIn("bench-tenants-hostile@example.com");
  const ordinary = [];
  for (let index = 0; index < ORDINARY_ACCOUNTS; index++)
    ordinary.push(await publishedIn(`bench-tenants-${index}@example.com`));
  const readerBuyer = await createBuyer("bench-tenants-reader@example.com");
  const reader = {
    buyerId: readerBuyer.id,
    orderId: (await createOrder({ buyerId: readerBuyer.id, name: "order reads", status: "delivered" })).id,
  };
  await processPendingNow();
  await closeEnginePool();
  log(`published in ${round((performance.now() - started) / 1000, 1)} s`);

  const exempt = [...ordinary.map((one) => one.buyerId), reader.buyerId];
  const keys = await createBenchKeys(pool, [hostile.buyerId, ...exempt]);
  const app = await startAppServer({
    databaseUrl,
    storageDir: process.env.STORAGE_DIR!,
    env: {
      RATE_LIMIT_EXEMPT_BUYERS: exempt.join(","),
      JOBS_WORKER: "off",
      DATASET_MEMORY_LIMIT: serverMemory,
      METRICS_TOKEN: metricsToken,
    },
  });
  stopApp = app.stop;
  const workerEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    DATASET_MEMORY_LIMIT: serverMemory,
    // Its own: a worker starting removes what it finds left in its temporary directory.
    DATASET_TEMP_DIR: path.join(workDir, "worker-engine"),
  };
  worker = await startWorkerProcess(() =>
    spawn(process.execPath, npmScriptArgs("worker"), { env: workerEnv, stdio: ["ignore", "pipe", "pipe"] }),
  );
  const workerPid = worker.pid!;

  const table = (orderId: string) => `/api/v1/orders/${orderId}/tables/products`;
  const sqlPath = (orderId: string, sql: string) =>
    `/api/v1/orders/${orderId}/sql?q=${encodeURIComponent(sql)}&limit=1000`;
  const accounts: OrdinaryAccount[] = ordinary.map((one, index) => ({
    key: keys.get(one.buyerId)!,
    orderId: one.orderId,
    rowsPath: (call) =>
      `${table(one.orderId)}/rows?columns=id,name,price&limit=100&where=${encodeURIComponent(`id = ${1 + ((call * 7_919_003 + index * 104_729) % ROWS)}`)}`,
    sqlPath: sqlPath(one.orderId, GROUP_BY),
    // 1,000 rows of the key's order; the upper end grows with every lap so that no request repeats.
    subsetPath: (seq) => {
      const first = 1 + ((seq * 1000) % ROWS);
      const where = `id >= ${first} AND id < ${first + 1000 + Math.floor((seq * 1000) / ROWS)}`;
      return `${table(one.orderId)}/subset?columns=id,name,price&format=csv&where=${encodeURIComponent(where)}`;
    },
  }));
  const hostileAccount = {
    key: keys.get(hostile.buyerId)!,
    cpuPath: (seq: number) =>
      sqlPath(hostile.orderId, `SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = ${seq % 7}`),
    widePath: sqlPath(hostile.orderId, WIDE_SQL),
    subsetPath: (seq: number) =>
      `${table(hostile.orderId)}/subset?format=jsonl&where=${encodeURIComponent(`id <> ${ROWS + seq}`)}`,
  };
  let seq = 0;
  const nextSeq = () => seq++;

  // The launcher (app.pid) starts the HTTP server, whose children are the query engine's processes.
  const httpServerPid = descendants(app.pid).find((pid) => commandLine(pid).includes("http-server")) ?? app.pid;
  const serverProcesses = () =>
    [app.pid, ...descendants(app.pid)].filter((pid) => !commandLine(pid).includes("engine-child"));
  const pendingSubsets = async () =>
    Number((await pool.query(`SELECT count(*) AS n FROM table_subsets WHERE status = 'pending'`)).rows[0].n);
  /** Each account's ready subsets: their recorded size and the bytes on disk. */
  const subsetStore = async () => {
    const { rows } = await pool.query<{ email: string; keys: string[]; bytes: string }>(
      `SELECT b.email, array_agg(s.storage_key) AS keys, sum(s.size) AS bytes
       FROM table_subsets s JOIN orders o ON o.id = s.order_id JOIN buyers b ON b.id = o.buyer_id
       WHERE s.status = 'ready' GROUP BY b.email`,
    );
    const onDisk = (key: string) => {
      try {
        return statSync(path.resolve(process.env.STORAGE_DIR!, key)).size;
      } catch {
        return 0;
      }
    };
    return Object.fromEntries(
      rows.map((row) => [
        row.email.replace(/@.*/, ""),
        {
          subsets: row.keys.length,
          mb: round(Number(row.bytes) / 2 ** 20, 1),
          disk_mb: round(row.keys.reduce((sum, key) => sum + onDisk(key), 0) / 2 ** 20, 1),
        },
      ]),
    );
  };
  /** The lines of /api/metrics about queries (admission, refusals, cuts, cancellations), where it has any. */
  const queryMetrics = async () => {
    const response = await fetch(`${app.url}/api/metrics`, { headers: { Authorization: `Bearer ${metricsToken}` } });
    const text = await response.text();
    return text.split("\n").filter((line) => /^[a-z_]*(quer|admi|cancel|truncat|subset|engine)[a-z_]*[{ ]/.test(line));
  };

  /** Waits (at most DRAIN_SECONDS) until no engine process works and no subset is pending. */
  const drain = async () => {
    const started = Date.now();
    while (Date.now() - started < DRAIN_SECONDS * 1000) {
      const [serverEngines, workerEngines, pending] = await Promise.all([
        engineCpuOver(app.pid, 1000),
        engineCpuOver(workerPid, 1000),
        pendingSubsets(),
      ]);
      if (serverEngines < 0.05 && workerEngines < 0.05 && pending === 0)
        return { seconds: round((Date.now() - started) / 1000, 1), drained: true };
    }
    return { seconds: DRAIN_SECONDS, drained: false };
  };

  // Warm: every account's first query makes its engine instance; then the idle memory.
  const warm = { url: app.url, until: Date.now() + 3_000, hardStop: AbortSignal.timeout(60_000) };
  await Promise.all(accounts.map((account) => ordinaryLoop(warm, account, ORDINARY_PACE_MS, nextSeq)));
  await drain();
  const idleMemory = sampler(() => serverProcesses().reduce((sum, pid) => sum + rssKb(pid), 0), 200);
  await sleep(2_000);
  const idleSamples = idleMemory.stop();
  const idleKb = idleSamples.reduce((sum, value) => sum + value, 0) / idleSamples.length;
  const idleOwnKb = rssKb(httpServerPid);
  log(`idle: server RSS ${round(idleKb / 1024)} MB (its own ${round(idleOwnKb / 1024)} MB)`);

  const runPhase = async (withHostile: boolean): Promise<PhaseResult> => {
    const hardStop = new AbortController();
    const timer = setTimeout(() => hardStop.abort(), SECONDS * 1000 + PHASE_GRACE_MS);
    const phase: Phase = { url: app.url, until: Date.now() + SECONDS * 1000, hardStop: hardStop.signal };
    const processes = serverProcesses();
    const memory = sampler(() => processes.reduce((sum, pid) => sum + rssKb(pid), 0), 200);
    const own = sampler(() => rssKb(httpServerPid), 200);
    const [ordinaryFigures, reads, hostileFigures] = await Promise.all([
      Promise.all(accounts.map((account) => ordinaryLoop(phase, account, ORDINARY_PACE_MS, nextSeq))),
      orderReads(phase, keys.get(reader.buyerId)!, reader.orderId, ORDER_READ_PACE_MS),
      withHostile ? hostileLoop(phase, hostileAccount, HOSTILE_INTERVAL_MS, nextSeq) : undefined,
    ]);
    clearTimeout(timer);
    const statuses = ordinaryFigures.reduce((into, figures) => addTally(into, figures.statuses), {} as Tally);
    const all = (kind: "rows" | "sql" | "subset") => ordinaryFigures.flatMap((figures) => figures.ms[kind]);
    return {
      ordinary_statuses: statuses,
      rows_ms: latencyFigures(all("rows")),
      sql_ms: latencyFigures(all("sql")),
      subset_ms: latencyFigures(all("subset")),
      order_read_ms: latencyFigures(reads.ms),
      order_read_statuses: reads.statuses,
      hostile: hostileFigures,
      server_rss_over_idle_mb: round((Math.max(...memory.stop()) - idleKb) / 1024, 1),
      server_own_rss_over_idle_mb: round((Math.max(...own.stop()) - idleOwnKb) / 1024, 1),
      subset_store: await subsetStore(),
      metrics: await queryMetrics(),
    };
  };

  const rounds: RoundResult[] = [];
  for (let index = 0; index < ROUNDS; index++) {
    log(`round ${index + 1} of ${ROUNDS}: quiet phase, ${SECONDS} s`);
    const quiet = await runPhase(false);
    log(`round ${index + 1}: loaded phase, ${SECONDS} s`);
    const loaded = await runPhase(true);
    // Every client has left (the hostile ones at the phase's end): does any query still run 2 s later?
    await sleep(2_000);
    const engineCpuAfter = await engineCpuOver(app.pid, 1000);
    const drained = await drain();
    // Subsets asked for in the phase may be made after it (their clients gone): counted once the jobs are done.
    rounds.push({
      quiet,
      loaded,
      engine_cpu_2s_after_clients_left: engineCpuAfter,
      drain: drained,
      subset_store_after_drain: await subsetStore(),
    });
    log(
      `round ${index + 1}: rows p99 ${quiet.rows_ms.p99} -> ${loaded.rows_ms.p99} ms, sql p99 ${quiet.sql_ms.p99} -> ${loaded.sql_ms.p99} ms, ` +
        `order reads p99 ${quiet.order_read_ms.p99} -> ${loaded.order_read_ms.p99} ms; engine CPU 2 s after: ${engineCpuAfter}; drained in ${drained.seconds} s`,
    );
  }
  await reportTenants({
    settings: {
      load_average: { start: loadAtStart, end: os.loadavg().map((value) => round(value, 2)) },
      rows: ROWS,
      seconds: SECONDS,
      rounds: ROUNDS,
      wide_columns: WIDE_COLUMNS,
      engine_memory_limit: serverMemory,
    },
    idle: { server_rss_mb: round(idleKb / 1024, 1), server_own_rss_mb: round(idleOwnKb / 1024, 1) },
    subsetQuotaBytes: SUBSET_QUOTA_BYTES,
    rounds,
  });
} finally {
  if (worker) await stopWorkerProcess(worker);
  await stopApp?.();
  await pool.end();
  await closeJobQueue();
  await disconnectDb();
  await fs.rm(workDir, { recursive: true, force: true });
}
