import { spawn, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import {
  BENCH_AUTH_SECRET,
  benchDatabaseUrl,
  createBenchKeys,
  deleteBenchKeys,
  log,
  report,
  round,
  sleep,
  startAppServer,
  npmScriptArgs,
} from "./lib/common";
import { cpuShare, schedulingGroup } from "./lib/cpu-share";
import { benchRounds, formatSpread, spread } from "./lib/interleaved";
import { runLoad, startLoad, type LoadResult } from "./lib/load";
import { activitySampler, type ActivitySummary } from "./lib/pg-activity";
import { writeProductParts } from "./lib/product-parts";
import { ensureSeeded, seededBuyers } from "./lib/seed";
import { startWorkerProcess, stopWorkerProcess } from "./lib/worker-process";

/**
 * Does the API keep its pace while data work runs (issue #38)? Order reads (`GET /api/v1/orders?limit=50`,
 * ISOLATION_CONNECTIONS (16) connections over 10,000 buyers' keys, the rate limit on) against the
 * production server (JOBS_WORKER=off), and a keyed publication of ISOLATION_GB (1) GB of CSV in 10
 * parts made the operator's way (`scripts/admin.ts table:publish`, then `npm run worker`'s jobs:
 * profiles, Parquet renditions, key check) by a worker in a process of its own. BENCH_ROUNDS
 * interleaved rounds of: quiet reads (ISOLATION_QUIET_SECONDS, 20) / the publication alone / reads
 * while it runs with the data work at a low CPU weight (ISOLATION_WORKER_WEIGHT, 20, against the
 * default 100: deploy/systemd) / the same at equal weight (100). Reads beside the publication last
 * exactly as long as it does. Per round, the reads' p50/p99/throughput as ratios to quiet and the
 * publication's time as a ratio to alone; medians with their spread. Goals: p99 within 2x of quiet,
 * the publication within 1.5x of alone, at the low weight.
 * ISOLATION_NICE=1 adds a variant: the data work under `nice -n 19` in this process's session, the
 * shape of the stalls in docs/operations.md#cpu-share-for-data-work. Every variant samples
 * pg_stat_activity (lock waits, the longest statement, transactions left open).
 */
const gigabytes = Number(process.env.ISOLATION_GB ?? 1);
const connections = Number(process.env.ISOLATION_CONNECTIONS ?? 16);
const quietSeconds = Number(process.env.ISOLATION_QUIET_SECONDS ?? 20);
const lowWeight = Number(process.env.ISOLATION_WORKER_WEIGHT ?? 20);
const withNice = process.env.ISOLATION_NICE === "1";
const rounds = benchRounds();
if (!(gigabytes > 0) || !(connections > 0) || !(quietSeconds > 0))
  throw new Error("ISOLATION_GB, ISOLATION_CONNECTIONS and ISOLATION_QUIET_SECONDS must be positive numbers");

const databaseUrl = benchDatabaseUrl();
await ensureSeeded(databaseUrl, log);
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-isolation-"));
const storageDir = path.join(workDir, "storage");
const pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
const dataEnv: NodeJS.ProcessEnv = {
  ...process.env,
  NODE_ENV: "production",
  DATABASE_URL: databaseUrl,
  STORAGE_DIR: storageDir,
  STORAGE_DRIVER: "local",
  DATASET_TEMP_DIR: path.join(workDir, "engine"),
  AUTH_SECRET: BENCH_AUTH_SECRET,
  KEY_LIFECYCLE_CRON: "0 0 1 1 *",
};

log(`writing ${gigabytes} GB of CSV in 10 parts`);
const parts = await writeProductParts(workDir, gigabytes * 1024);
/**
 * An order of its own for each publication: table:publish adds the parts as the order's files, whose
 * names must be new, and every variant then times the same work (a first version, no change file).
 */
async function newOrder(): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `WITH buyer AS (
       INSERT INTO buyers (email) VALUES ('bench-isolation@example.com')
       ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING id
     )
     INSERT INTO orders (buyer_id, name, status, paid_at, delivered_at)
     SELECT id, 'Isolation bench', 'delivered', now(), now() FROM buyer RETURNING id`,
  );
  return rows[0]!.id;
}

const buyers = await (await seededBuyers(pool)).regular(10_000);
log(`creating ${buyers.length} keys, one per account`);
const keys = await createBenchKeys(pool, buyers);
const requestsFile = path.join(workDir, "requests.json");
await fs.writeFile(
  requestsFile,
  JSON.stringify(
    [...keys.values()].map((secret) => ({
      path: "/api/v1/orders?limit=50",
      headers: { authorization: `Bearer ${secret}` },
    })),
  ),
);
const app = await startAppServer({ databaseUrl, storageDir, env: { JOBS_WORKER: "off" } });
const load = { connections, warmupSeconds: 2, cycle: true, requestsFile };

/** How the data work's processes are started: in a CPU share, or under nice in this session. */
type Placement = { name: string; wrap: (command: string, args: string[]) => string[] };
const low = cpuShare("dataset-access-bench-low", lowWeight);
const equal = cpuShare("dataset-access-bench-equal", 100);
const placements = {
  low: { name: `low weight (${low.kind})`, wrap: low.wrap },
  equal: { name: `equal weight (${equal.kind})`, wrap: equal.wrap },
  nice: { name: "nice -n 19 in the server's session", wrap: (c: string, a: string[]) => ["nice", "-n", "19", c, ...a] },
} satisfies Record<string, Placement>;

const dataWork = new Set<ChildProcess>();
// A run stopped half-way (Ctrl-C, an error) must not leave a worker or a publisher behind.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
process.once("exit", () => {
  for (const child of dataWork) if (child.exitCode === null) child.kill("SIGKILL");
});

function spawnIn(placement: Placement, script: "worker" | "admin", args: string[]): ChildProcess {
  const [command, ...rest] = placement.wrap(process.execPath, npmScriptArgs(script, args));
  const child = spawn(command!, rest, { env: dataEnv, stdio: ["ignore", "pipe", "pipe"] });
  dataWork.add(child);
  child.once("exit", () => dataWork.delete(child));
  return child;
}

const startWorker = (placement: Placement) => startWorkerProcess(() => spawnIn(placement, "worker", []));

/** `table:publish` of the parts, then waits for the version: seconds from the command to the version. */
async function publish(placement: Placement, table: string): Promise<number> {
  const order = await newOrder();
  const started = performance.now();
  const args = ["table:publish", "--order", order, "--table", table, "--key", "id", "--json"];
  const admin = spawnIn(placement, "admin", [...args, ...parts.flatMap((part) => ["--path", part])]);
  let stdout = "";
  admin.stdout!.on("data", (chunk) => (stdout += chunk));
  admin.stderr!.on("data", () => {});
  const code = await new Promise<number | null>((resolve) => admin.once("exit", resolve));
  if (code !== 0) throw new Error(`table:publish exited ${code}: ${stdout}`);
  const { publication } = JSON.parse(stdout) as { publication: string };
  for (;;) {
    const { rows } = await pool.query<{ status: string; error: string | null }>(
      `SELECT status, error FROM table_publications WHERE id = $1`,
      [publication],
    );
    if (rows[0]?.status === "ready") return (performance.now() - started) / 1000;
    if (rows[0]?.status === "failed") throw new Error(`publication failed: ${rows[0].error}`);
    await sleep(200);
  }
}

type Beside = { load: LoadResult; seconds: number; activity: ActivitySummary; groups: Record<string, string> };

/** Reads while the publication runs, both placed as given; the reads stop when the version is made. */
async function readsBeside(placement: Placement, table: string): Promise<Beside> {
  const worker = await startWorker(placement);
  try {
    const reads = startLoad(app, { ...load, seconds: 0, untilStopped: true });
    await reads.measuring;
    const activity = activitySampler(pool);
    const publishing = publish(placement, table);
    await sleep(3_000);
    const groups = {
      app_server: schedulingGroup(app.pid),
      worker: schedulingGroup(worker.pid!),
      ...(await activity.backendGroup()),
    };
    const seconds = await publishing;
    return { load: await reads.stop(), seconds, activity: await activity.stop(), groups };
  } finally {
    await stopWorkerProcess(worker);
  }
}

async function alone(table: string): Promise<number> {
  const worker = await startWorker(placements.low);
  try {
    return await publish(placements.low, table);
  } finally {
    await stopWorkerProcess(worker);
  }
}

const figures = (result: LoadResult) => ({
  requests_per_s: round(result.requests_per_s, 1),
  p50_ms: result.latency_ms.p50,
  p99_ms: result.latency_ms.p99,
  max_ms: result.latency_ms.max,
  non_2xx: result.non_2xx,
  errors: result.errors + result.timeouts,
});

type Round = {
  quiet: LoadResult;
  quietActivity: ActivitySummary;
  alone: number;
  low: Beside;
  equal: Beside;
  nice?: Beside;
};
const perRound: Round[] = [];
const stamp = Date.now();
try {
  for (let r = 1; r <= rounds; r++) {
    log(`round ${r} of ${rounds}: quiet reads, ${connections} connections, ${quietSeconds} s`);
    const quietActivity = activitySampler(pool);
    const quiet = await runLoad(app, { ...load, seconds: quietSeconds });
    const quietSummary = await quietActivity.stop();
    log(`round ${r}: publication alone`);
    const aloneSeconds = await alone(`alone_${stamp}_${r}`);
    log(`round ${r}: reads beside the publication, ${placements.low.name}`);
    const lowRun = await readsBeside(placements.low, `low_${stamp}_${r}`);
    log(`round ${r}: reads beside the publication, ${placements.equal.name}`);
    const equalRun = await readsBeside(placements.equal, `equal_${stamp}_${r}`);
    const niceRun = withNice ? await readsBeside(placements.nice, `nice_${stamp}_${r}`) : undefined;
    perRound.push({
      quiet,
      quietActivity: quietSummary,
      alone: aloneSeconds,
      low: lowRun,
      equal: equalRun,
      nice: niceRun,
    });
    log(
      `round ${r}: quiet p99 ${quiet.latency_ms.p99} ms; alone ${round(aloneSeconds)} s; low weight p99 ` +
        `${lowRun.load.latency_ms.p99} ms, ${round(lowRun.seconds)} s; equal p99 ${equalRun.load.latency_ms.p99} ms, ` +
        `${round(equalRun.seconds)} s` +
        (niceRun ? `; nice p99 ${niceRun.load.latency_ms.p99} ms, ${round(niceRun.seconds)} s` : ""),
    );
  }
} finally {
  await app.stop();
  await deleteBenchKeys(pool, keys.values());
  low.remove();
  equal.remove();
}

const versus = (variant: "low" | "equal" | "nice") => {
  const runs = perRound.filter((one) => one[variant]);
  if (!runs.length) return undefined;
  return {
    placement: placements[variant].name,
    p99_vs_quiet: spread(runs.map((one) => one[variant]!.load.latency_ms.p99 / one.quiet.latency_ms.p99)),
    p50_vs_quiet: spread(runs.map((one) => one[variant]!.load.latency_ms.p50 / one.quiet.latency_ms.p50)),
    throughput_vs_quiet: spread(runs.map((one) => one[variant]!.load.requests_per_s / one.quiet.requests_per_s)),
    publication_vs_alone: spread(runs.map((one) => one[variant]!.seconds / one.alone)),
  };
};
const low_ = versus("low")!;
const equal_ = versus("equal")!;
const nice_ = versus("nice");
await report(
  "isolation",
  {
    gigabytes,
    connections,
    rounds,
    cpu_share: { low: low.kind, equal: equal.kind },
    low_weight: low_,
    equal_weight: equal_,
    nice: nice_,
    per_round: perRound.map((one) => ({
      quiet: { ...figures(one.quiet), activity: one.quietActivity },
      alone_s: round(one.alone),
      ...Object.fromEntries(
        (["low", "equal", "nice"] as const)
          .filter((variant) => one[variant])
          .map((variant) => {
            const run = one[variant]!;
            return [
              variant,
              { ...figures(run.load), seconds: round(run.seconds), activity: run.activity, groups: run.groups },
            ];
          }),
      ),
    })),
  },
  `order reads beside a ${gigabytes} GB keyed publication: at ${low.kind} p99 ${formatSpread(low_.p99_vs_quiet)} of quiet ` +
    `(goal <= 2), publication ${formatSpread(low_.publication_vs_alone)} of alone (goal <= 1.5); at equal weight p99 ` +
    `${formatSpread(equal_.p99_vs_quiet)}, publication ${formatSpread(equal_.publication_vs_alone)}` +
    (nice_
      ? `; under nice -n 19 p99 ${formatSpread(nice_.p99_vs_quiet)}, publication ${formatSpread(nice_.publication_vs_alone)}`
      : ""),
);
await pool.end();
await fs.rm(workDir, { recursive: true, force: true });
