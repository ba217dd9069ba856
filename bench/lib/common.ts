import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, promises as fs, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { migrate } from "../../lib/db/migrate";
import { generateSecret, hashSecret, secretDisplayParts } from "../../lib/keys/secret";
import { freePort } from "../../tests/helpers/server";

export { freePort };

/**
 * Helpers shared by the benchmarks: the bench database, servers started and stopped by the
 * benchmark itself, process-tree memory from /proc, statistics and result files.
 */

export const BENCH_AUTH_SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz";
export const RESULTS_DIR = path.resolve("bench/results");

/** The database the large-data benchmarks use: BENCH_DATABASE_URL, else `dataset_access_bench` on DATABASE_URL's server. */
export function benchDatabaseUrl(): string {
  if (process.env.BENCH_DATABASE_URL) return process.env.BENCH_DATABASE_URL;
  const url = new URL(process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres");
  url.pathname = "/dataset_access_bench";
  return url.toString();
}

/** Creates the database if it does not exist yet (on the same server, through its `postgres` database). */
export async function ensureDatabaseExists(databaseUrl: string): Promise<boolean> {
  const probe = new pg.Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
    await probe.end();
    return false;
  } catch (error) {
    await probe.end().catch(() => {});
    if ((error as { code?: string }).code !== "3D000") throw error; // 3D000: invalid_catalog_name
  }
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await admin.end();
  }
  return true;
}

/**
 * A new, migrated database `name` on DATABASE_URL's server, dropped first if a run left it: for the
 * benchmarks whose counts must start from nothing.
 */
export async function freshBenchDatabase(name: string): Promise<string> {
  const url = new URL(process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres");
  url.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  url.pathname = `/${name}`;
  await ensureDatabaseExists(url.toString());
  await migrate(url.toString());
  return url.toString();
}

/**
 * A benchmark's own world: a fresh database `dataset_access_bench_{name}`, a temporary folder for its
 * storage and the engine's temp files, and the process's environment pointed at them (the bench
 * calls the library directly, and the servers it starts inherit it). `extra` is added to it.
 */
export async function benchWorkspace(
  name: string,
  extra: Record<string, string> = {},
): Promise<{ databaseUrl: string; workDir: string; env: NodeJS.ProcessEnv }> {
  const databaseUrl = await freshBenchDatabase(`dataset_access_bench_${name.replaceAll("-", "_")}`);
  const workDir = await fs.mkdtemp(path.join(os.tmpdir(), `bench-${name}-`));
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    STORAGE_DIR: path.join(workDir, "storage"),
    DATASET_TEMP_DIR: path.join(workDir, "engine"),
    AUTH_SECRET: BENCH_AUTH_SECRET,
    ...extra,
  };
  Object.assign(process.env, env);
  return { databaseUrl, workDir, env };
}

export type Server = { url: string; pid: number; child: ChildProcess; output: () => string; stop: () => Promise<void> };

const running = new Set<ChildProcess>();
// A benchmark that fails half-way must not leave its servers behind.
process.once("exit", () => {
  for (const child of running) for (const pid of [...descendants(child.pid ?? -1), child.pid]) kill(pid, "SIGKILL");
});

/** Spawns a server process and waits until `readyPath` answers 2xx (or the process exits, or 90 s pass). */
export async function startProcessServer(options: {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  port: number;
  readyPath: string;
  name: string;
  cwd?: string;
}): Promise<Server> {
  const child = spawn(options.command, options.args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let output = "";
  child.stdout?.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  child.stderr?.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  const url = `http://127.0.0.1:${options.port}`;
  const server: Server = { url, pid: child.pid!, child, output: () => output, stop: () => stopProcess(child) };
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      running.delete(child);
      throw new Error(`The ${options.name} exited (${child.exitCode ?? child.signalCode}):\n${output}`);
    }
    const ok = await fetch(url + options.readyPath).then(
      async (response) => (await response.arrayBuffer(), response.ok),
      () => false,
    );
    if (ok) return server;
    await sleep(200);
  }
  await server.stop();
  throw new Error(`The ${options.name} did not answer ${options.readyPath} within 90 s:\n${output}`);
}

const SCRIPT_SOURCES = { serve: "scripts/serve.ts", worker: "scripts/worker.ts", admin: "scripts/admin.ts" };

/**
 * Node's arguments for `npm start` (serve), `npm run worker` or `npm run admin` in checkout `root`, as its npm
 * scripts run them: built (scripts/built.mjs), or from source under tsx in a checkout from before that.
 */
export function npmScriptArgs(name: keyof typeof SCRIPT_SOURCES, args: string[] = [], root = "."): string[] {
  const built = path.resolve(root, "scripts/built.mjs");
  if (existsSync(built)) return [built, name, ...args];
  return ["--import", "tsx", path.resolve(root, SCRIPT_SOURCES[name]), ...args];
}

/** The production app (`scripts/serve.ts start`, what `npm start` runs) on a free loopback port. */
export async function startAppServer(options: {
  databaseUrl: string;
  storageDir: string;
  env?: Record<string, string>;
  /** Another checkout of the app, built (`--baseline` of the A/B benchmarks): its server instead of this one's. */
  root?: string;
}): Promise<Server> {
  const root = path.resolve(options.root ?? ".");
  requireProductionBuild(root);
  const port = await freePort();
  // No shared rate-limit store: the in-process limiter (the benchmark buyers are exempt from it anyway).
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ["REDIS_URL", "UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "APP_URL"]) delete env[name];
  return startProcessServer({
    name: options.root ? `app server of ${root}` : "app server",
    command: process.execPath,
    args: npmScriptArgs("serve", ["start", "--hostname", "127.0.0.1"], root),
    cwd: root,
    env: {
      ...env,
      NODE_ENV: "production",
      DATABASE_URL: options.databaseUrl,
      DATABASE_POOL_SIZE: "10",
      STORAGE_DIR: options.storageDir,
      AUTH_SECRET: BENCH_AUTH_SECRET,
      MIGRATE_ON_START: "false",
      PORT: String(port),
      ...options.env,
    },
    port,
    readyPath: "/api/health",
  });
}

/** The floor server (bench/floor-server.ts) in a process of its own, like the app. */
export async function startFloorServer(env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  return startProcessServer({
    name: "floor server",
    command: process.execPath,
    args: ["--import", "tsx", path.resolve("bench/floor-server.ts")],
    env: { ...process.env, ...env, PORT: String(port) },
    port,
    readyPath: "/health",
  });
}

export function requireProductionBuild(root = "."): void {
  if (!existsSync(path.resolve(root, ".next/BUILD_ID"))) {
    console.error(
      `No production build (${path.resolve(root, ".next")} is missing): run \`npm run build\` there first.`,
    );
    process.exit(1);
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    running.delete(child);
    return;
  }
  const tree = descendants(child.pid!);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timedOut = await Promise.race([exited.then(() => false), sleep(15_000).then(() => true)]);
  if (timedOut) kill(child.pid, "SIGKILL");
  // The launcher forwards SIGTERM to Next.js; anything of the tree still alive is ended by id.
  for (const pid of tree) kill(pid, "SIGKILL");
  running.delete(child);
}

function kill(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid || pid < 0) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Memory of a process tree, from /proc

/** Parent pid of every live process. */
function parentsByPid(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const entry of safeReaddir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSyncQuiet(`/proc/${entry}/stat`);
      // pid (comm) state ppid ... — comm may contain spaces and parentheses, so split after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // the process ended meanwhile
    }
  }
  return parents;
}

/** All live descendants of a process (children, grandchildren, ...). */
export function descendants(rootPid: number): number[] {
  const parents = parentsByPid();
  const result: number[] = [];
  const queue = [rootPid];
  while (queue.length) {
    const pid = queue.shift()!;
    for (const [child, parent] of parents) {
      if (parent === pid) {
        result.push(child);
        queue.push(child);
      }
    }
  }
  return result;
}

export function commandLine(pid: number): string {
  try {
    return readFileSyncQuiet(`/proc/${pid}/cmdline`).split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** The data engine's processes (lib/engine/engine-child) among a process's descendants. */
export function engineProcesses(rootPid: number): number[] {
  return descendants(rootPid).filter((pid) => commandLine(pid).includes("engine-child"));
}

/**
 * CPU-seconds a second the engine's processes under `rootPid` used over `ms`, rescanned every 100 ms: a
 * process started meanwhile (a killed one's replacement) counts from its start, one that ended counts up
 * to the last sample before its end.
 */
export async function engineCpuOver(rootPid: number, ms: number): Promise<number> {
  const seen = new Map(engineProcesses(rootPid).map((pid) => [pid, cpuSeconds([pid])]));
  let used = 0;
  for (let waited = 0; waited < ms; waited += 100) {
    await sleep(100);
    for (const pid of engineProcesses(rootPid)) {
      const now = cpuSeconds([pid]);
      used += now - (seen.get(pid) ?? 0);
      seen.set(pid, now);
    }
  }
  return round(used / (ms / 1000), 2);
}

/** VmRSS of one process in KiB (0 if it is gone). */
export function rssKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSyncQuiet(`/proc/${pid}/status`))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Sum of VmRSS of a process and all its descendants, in KiB. */
export function treeRssKb(rootPid: number): number {
  return [rootPid, ...descendants(rootPid)].reduce((sum, pid) => sum + rssKb(pid), 0);
}

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux (getconf CLK_TCK)

/** CPU seconds (user + system) used so far by a process and its live descendants. */
export function treeCpuSeconds(rootPid: number): number {
  return cpuSeconds([rootPid, ...descendants(rootPid)]);
}

/** CPU seconds (user + system) used so far by the given processes (those still alive). */
export function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSyncQuiet(`/proc/${pid}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      // gone
    }
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** CPU seconds the whole machine spent busy (all cores, everything but idle and iowait). */
export function machineBusySeconds(): number {
  const fields = readFileSyncQuiet("/proc/stat").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_PER_SECOND;
}

/** Samples `sample()` every `intervalMs` until stopped; returns every sample. */
export function sampler(sample: () => number, intervalMs = 50): { stop: () => number[] } {
  const samples: number[] = [sample()];
  const timer = setInterval(() => samples.push(sample()), intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      samples.push(sample());
      return samples;
    },
  };
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function readFileSyncQuiet(file: string): string {
  return readFileSync(file, "utf8");
}

// ---------------------------------------------------------------------------------------------
// Keys for the benchmark buyers

/**
 * Inserts one `datasets:read` key per buyer directly (the same columns createApiKey writes) and
 * returns their secrets. Names start with `bench-run-` so a later run can remove leftovers.
 */
export async function createBenchKeys(pool: pg.Pool, buyerIds: string[]): Promise<Map<string, string>> {
  await pool.query(`DELETE FROM api_keys WHERE name LIKE 'bench-run-%' AND created_at < now() - interval '1 hour'`);
  const secrets = new Map<string, string>();
  const name = `bench-run-${process.pid}-${Date.now()}`;
  for (const buyerId of buyerIds) {
    const secret = generateSecret();
    const { prefix, last4 } = secretDisplayParts(secret);
    await pool.query(
      `INSERT INTO api_keys (buyer_id, name, permission, secret_hash, prefix, last4, expires_at)
       VALUES ($1, $2, 'datasets:read', $3, $4, $5, now() + interval '30 days')`,
      [buyerId, name, hashSecret(secret), prefix, last4],
    );
    secrets.set(buyerId, secret);
  }
  return secrets;
}

export async function deleteBenchKeys(pool: pg.Pool, secrets: Iterable<string>): Promise<void> {
  const hashes = [...secrets].map(hashSecret);
  await pool.query(`DELETE FROM api_keys WHERE secret_hash = ANY($1::text[])`, [hashes]);
}

// ---------------------------------------------------------------------------------------------
// Statistics and output

/** Nearest-rank percentile of already sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

export const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/** a / b, rounded; the one way every benchmark states a figure against its baseline. */
export const ratio = (a: number, b: number, digits = 2) => round(a / b, digits);

/** Prints the JSON result and a one-line summary, and writes bench/results/<name>.json. */
export async function report(name: string, result: Record<string, unknown>, summary: string): Promise<void> {
  const body = { benchmark: name, finished_at: new Date().toISOString(), ...result, summary };
  await fs.mkdir(RESULTS_DIR, { recursive: true });
  await fs.writeFile(path.join(RESULTS_DIR, `${name}.json`), JSON.stringify(body, null, 2) + "\n");
  console.log(JSON.stringify(body, null, 2));
  console.log(summary);
}

/** Runs a command to completion, capturing stdout (stderr passes through). */
export function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "inherit"] });
    running.add(child);
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.once("error", reject);
    child.once("exit", (code) => {
      running.delete(child);
      resolve({ code: code ?? 1, stdout });
    });
  });
}

export const log = (message: string) => console.error(`[bench] ${message}`);
