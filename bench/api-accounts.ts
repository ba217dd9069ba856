import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { generateSecret, hashSecret, secretDisplayParts } from "../lib/keys/secret";
import { createRateLimiter } from "../lib/ratelimit";
import { InProcessSlidingWindow } from "../lib/ratelimit/sliding-window";
import {
  benchDatabaseUrl,
  createBenchKeys,
  deleteBenchKeys,
  descendants,
  freePort,
  log,
  median,
  report,
  requireProductionBuild,
  round,
  rssKb,
  sampler,
  sleep,
  startAppServer,
  startFloorServer,
  type Server,
  npmScriptArgs,
} from "./lib/common";
import { describeLoad, runLoad, type LoadConfig, type LoadRequest, type LoadResult } from "./lib/load";
import { benchRounds, formatSpread, spread, type Spread } from "./lib/interleaved";
import { ensureSeeded, seededBuyers } from "./lib/seed";

/**
 * The path users actually run: `GET /api/v1/orders?limit=50` over the 1M-order data set with the
 * rate limit on (no exemption), 10,000 distinct accounts each with its own key, dealt out 200 per
 * connection (50 connections, 20 s; each account stays well under 60 a minute, so every answer is
 * a 200). BENCH_ROUNDS interleaved rounds (at least 3) of: the floor (bench/floor-server.ts, same
 * SQL), the in-process limiter (the single-instance default), the REDIS_URL limiter (real Redis),
 * and only accounts over their limit (429s). Each ratio is the median of the rounds' ratios, with
 * its spread; statements per request are PostgreSQL's committed transactions per request sent.
 * Once: the same load with 10% of the requests from accounts over their limit; the limiter's own
 * cost per check; memory (the server's RSS idle, under load, and after 100,000 distinct accounts
 * made one request); cold start (`npm start` to the first answered API request) and a fresh
 * clone's `npm install` (BENCH_INSTALL=0 skips it).
 * BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_CONNECTIONS, BENCH_ACCOUNTS (10,000), BENCH_MEMORY_ACCOUNTS (100,000).
 *
 * `--baseline DIR`: an A/B comparison with another checkout of the app, built (e.g. `git worktree add DIR
 * <parent commit> && cd DIR && npm ci && npm run build`): in every round its server serves the same load,
 * right before or after this checkout's (alternating), on the same database; the report adds this
 * checkout's throughput and CPU per request as ratios to the baseline's (goals >= 0.95 and <= 1.05).
 */
requireProductionBuild();
const { values: options } = parseArgs({ options: { baseline: { type: "string" } } });
const baselineDir = options.baseline && path.resolve(options.baseline);
if (baselineDir) requireProductionBuild(baselineDir);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const accountCount = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
const memoryAccounts = Number(process.env.BENCH_MEMORY_ACCOUNTS ?? 100_000);
const redisUrl = process.env.REDIS_URL;
const LIMIT = 50;
const OVER_LIMIT_SHARE = 0.1;

const databaseUrl = benchDatabaseUrl();
await ensureSeeded(databaseUrl, log);
const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-api-accounts-"));
const servers: Server[] = [];
let keys = new Map<string, string>();
const memoryBuyerEmail = `bench-memory-%@example.com`;

/** Writes the requests to a file for the load client (too many for an environment variable). */
async function requestsFile(name: string, requests: LoadRequest[]): Promise<string> {
  const file = path.join(workDir, `${name}.json`);
  await fs.writeFile(file, JSON.stringify(requests));
  return file;
}

const listRequest = (secret: string): LoadRequest => ({
  path: `/api/v1/orders?limit=${LIMIT}`,
  headers: { authorization: `Bearer ${secret}` },
});

/** CPU ms per request of the server process tree. */
const cpuMsPerRequest = (load: LoadResult) => (load.server_cpu_s * 1000) / load.requests_total;

/** The limiter's own cost: sequential checks of distinct accounts, in process and on Redis. */
async function limiterCost() {
  const store = new InProcessSlidingWindow(60, 60_000);
  const checks = 1_000_000;
  let started = process.hrtime.bigint();
  for (let i = 0; i < checks; i++) store.check(`buyer-${i % accountCount}`);
  const inProcessUs = Number(process.hrtime.bigint() - started) / 1000 / checks;
  let redisUs: number | undefined;
  if (redisUrl) {
    const limiter = createRateLimiter(
      { prefix: `bench:ratelimit:${randomUUID()}`, limit: 1_000_000, windowSeconds: 60 },
      { env: { REDIS_URL: redisUrl } },
    );
    await limiter.check("warm-up");
    const redisChecks = 5_000;
    started = process.hrtime.bigint();
    for (let i = 0; i < redisChecks; i++) await limiter.check(`buyer-${i % accountCount}`);
    redisUs = Number(process.hrtime.bigint() - started) / 1000 / redisChecks;
  }
  return {
    in_process_us_per_check: round(inProcessUs, 3),
    redis_us_per_check_sequential: redisUs && round(redisUs, 1),
  };
}

/** `npm start` (the launcher, migrations check included) to the first 200 from the API. */
async function coldStart(secret: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, npmScriptArgs("serve", ["start"]), {
    env: {
      ...process.env,
      NODE_ENV: "production",
      DATABASE_URL: databaseUrl,
      STORAGE_DIR: path.join(workDir, "storage"),
      AUTH_SECRET: "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz",
      PORT: String(port),
      REDIS_URL: "",
    },
    stdio: "ignore",
  });
  try {
    for (;;) {
      const status = await fetch(`http://127.0.0.1:${port}/api/v1/orders?limit=1`, {
        headers: { authorization: `Bearer ${secret}` },
      }).then(
        (response) => response.status,
        () => 0,
      );
      if (status === 200) return (performance.now() - started) / 1000;
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})`);
      if (performance.now() - started > 120_000) throw new Error("no answer within 120 s");
      await sleep(25);
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
}

/** A fresh clone's `npm install` (the npm cache of this machine is warm, as on a developer's). */
async function freshInstall(): Promise<number | undefined> {
  if (process.env.BENCH_INSTALL === "0") return undefined;
  const clone = path.join(workDir, "clone");
  const run = (command: string, args: string[], cwd?: string) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(command, args, { cwd, stdio: "ignore", env: { ...process.env, CI: "true" } });
      child.once("exit", (code) =>
        code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")}: ${code}`)),
      );
    });
  await run("git", ["clone", "--quiet", "--depth", "1", `file://${path.resolve(".")}`, clone]);
  const started = performance.now();
  await run("npm", ["install", "--no-audit", "--no-fund"], clone);
  return (performance.now() - started) / 1000;
}

/** Buyers and keys for the memory run: BENCH_MEMORY_ACCOUNTS in all, created in bulk, removed afterwards. */
async function memoryRunKeys(): Promise<string[]> {
  await pool.query(`DELETE FROM buyers WHERE email LIKE $1`, [memoryBuyerEmail]);
  const secrets: string[] = [];
  const batch = 5_000;
  for (let offset = 0; offset < memoryAccounts; offset += batch) {
    const emails: string[] = [];
    const hashes: string[] = [];
    const prefixes: string[] = [];
    const lasts: string[] = [];
    for (let i = offset; i < Math.min(memoryAccounts, offset + batch); i++) {
      const secret = generateSecret();
      const { prefix, last4 } = secretDisplayParts(secret);
      secrets.push(secret);
      emails.push(memoryBuyerEmail.replace("%", String(i)));
      hashes.push(hashSecret(secret));
      prefixes.push(prefix);
      lasts.push(last4);
    }
    await pool.query(
      `WITH new_buyers AS (
         INSERT INTO buyers (email) SELECT unnest($1::text[]) RETURNING id, email
       )
       INSERT INTO api_keys (buyer_id, name, permission, secret_hash, prefix, last4, expires_at)
       SELECT b.id, 'bench-memory', 'datasets:read', k.hash, k.prefix, k.last4, now() + interval '30 days'
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(email, hash, prefix, last4)
       JOIN new_buyers b ON b.email = k.email`,
      [emails, hashes, prefixes, lasts],
    );
  }
  return secrets;
}

try {
  const buyers = await (await seededBuyers(pool)).regular(accountCount);
  log(`creating ${buyers.length} keys, one per account`);
  keys = await createBenchKeys(pool, buyers);
  const load: LoadConfig = { connections, seconds, warmupSeconds, cycle: true };
  const secrets = buyers.map((buyer) => keys.get(buyer)!);

  // Accounts over their limit: each of the over-limit share's connections cycles through 10 of them.
  const overLimitConnections = Math.round(connections * OVER_LIMIT_SHARE);
  const overLimitSecrets = secrets.slice(0, overLimitConnections * 10);
  const underLimitSecrets = secrets.slice(overLimitSecrets.length);
  // The all-200 runs use only the accounts never put over their limit (the floor serves the same buyers).
  const appRequests = await requestsFile("accounts", underLimitSecrets.map(listRequest));
  const floorRequests = await requestsFile(
    "floor",
    buyers.slice(overLimitSecrets.length).map((buyer) => ({ path: `/orders?buyer=${buyer}&limit=${LIMIT}` })),
  );
  const perConnection = Math.floor(underLimitSecrets.length / (connections - overLimitConnections));
  const mixed: LoadRequest[] = [];
  for (let connection = 0; connection < connections; connection++) {
    const own =
      connection < overLimitConnections
        ? overLimitSecrets.slice(connection * 10, connection * 10 + 10)
        : underLimitSecrets.slice(
            (connection - overLimitConnections) * perConnection,
            (connection - overLimitConnections + 1) * perConnection,
          );
    // Equal slices for the load client: pad each connection's keys to the same count by repeating them.
    const slice = Math.floor(secrets.length / connections);
    for (let i = 0; i < slice; i++) mixed.push(listRequest(own[i % own.length]!));
  }
  const mixedRequests = await requestsFile("mixed", mixed);
  const overLimitOnly = await requestsFile("over-limit", overLimitSecrets.map(listRequest));

  log("the limiter's own cost per check");
  const limiter = await limiterCost();

  const floor = await startFloorServer({ DATABASE_URL: databaseUrl });
  servers.push(floor);
  const app = await startAppServer({ databaseUrl, storageDir: path.join(workDir, "storage") });
  servers.push(app);
  const baselineApp = baselineDir
    ? await startAppServer({ databaseUrl, storageDir: path.join(workDir, "storage"), root: baselineDir })
    : undefined;
  if (baselineApp) servers.push(baselineApp);
  const redisApp = redisUrl
    ? await startAppServer({ databaseUrl, storageDir: path.join(workDir, "storage"), env: { REDIS_URL: redisUrl } })
    : undefined;
  if (redisApp) servers.push(redisApp);
  const appRss = () => descendants(app.pid).reduce((sum, pid) => sum + rssKb(pid), 0);
  await sleep(1000);
  const idleRssKb = appRss();

  /** Transactions PostgreSQL committed (each API statement is one), as its statistics have them. */
  const commits = async () => {
    await sleep(1_500); // PostgreSQL publishes a backend's counts at most once a second
    const { rows } = await pool.query<{ commits: string }>(
      `SELECT xact_commit AS commits FROM pg_stat_database WHERE datname = current_database()`,
    );
    return Number(rows[0]!.commits);
  };

  /** Puts the over-limit accounts over their limit (61 requests each, or refused already). */
  const putOverLimit = async () => {
    for (const secret of overLimitSecrets) {
      for (let i = 0; i < 61; i++) {
        const response = await fetch(`${app.url}/api/v1/orders/ord_00000000000000000000000000000000`, {
          headers: { authorization: `Bearer ${secret}` },
        });
        await response.arrayBuffer();
        if (response.status === 429) break;
      }
    }
  };

  // First, while the over-limit accounts have just been put over: a tenth of the requests from them.
  log("app, in-process limiter, 10% of requests from accounts over their limit");
  await putOverLimit();
  const mixedLoad = await runLoad(app, { ...load, requestsFile: mixedRequests });

  // Interleaved rounds: floor, in-process, Redis, 429s only; each ratio compares neighbours in time.
  const rounds = benchRounds();
  type Round = {
    floor: LoadResult;
    inProcess: LoadResult;
    redis?: LoadResult;
    refused: LoadResult;
    statementsPerRequest: number;
    baseline?: LoadResult;
  };
  const perRound: Round[] = [];
  let loadPeakRssKb = 0;
  for (let round = 1; round <= rounds; round++) {
    log(`round ${round} of ${rounds}: floor, ${connections} connections cycling through ${buyers.length} buyers`);
    const floorLoad = await runLoad(floor, { ...load, requestsFile: floorRequests });
    // The baseline's turn comes before this checkout's in even rounds, after it in odd ones.
    const baselineRun = async () => {
      if (!baselineApp) return undefined;
      log(`round ${round} of ${rounds}: baseline app (${baselineDir}), in-process limiter`);
      return runLoad(baselineApp, { ...load, requestsFile: appRequests });
    };
    const baselineFirst = round % 2 === 0 ? await baselineRun() : undefined;
    log(`round ${round} of ${rounds}: app, in-process limiter`);
    const underLoad = sampler(appRss, 100);
    const commitsBefore = await commits();
    const inProcessLoad = await runLoad(app, { ...load, requestsFile: appRequests });
    // The load client's warm-up requests are not in requests_total: count statements against all it sent.
    const statementsPerRequest = (await commits()) - commitsBefore;
    loadPeakRssKb = Math.max(loadPeakRssKb, ...underLoad.stop());
    const baselineLoad = baselineFirst ?? (await baselineRun());
    let redisLoad: LoadResult | undefined;
    if (redisApp) {
      log(`round ${round} of ${rounds}: app, REDIS_URL limiter`);
      redisLoad = await runLoad(redisApp, { ...load, requestsFile: appRequests });
    }
    log(`round ${round} of ${rounds}: app, in-process limiter, only accounts over their limit (429s)`);
    await putOverLimit();
    const refusedLoad = await runLoad(app, { ...load, seconds: Math.min(seconds, 10), requestsFile: overLimitOnly });
    perRound.push({
      floor: floorLoad,
      inProcess: inProcessLoad,
      redis: redisLoad,
      refused: refusedLoad,
      statementsPerRequest: statementsPerRequest / (inProcessLoad.requests_total + inProcessLoad.warmup_requests),
      baseline: baselineLoad,
    });
  }
  await floor.stop();
  servers.splice(servers.indexOf(floor), 1);
  for (const other of [redisApp, baselineApp]) {
    if (!other) continue;
    await other.stop();
    servers.splice(servers.indexOf(other), 1);
  }

  log(`memory: ${memoryAccounts} distinct accounts, one request each`);
  const memorySecrets = await memoryRunKeys();
  const beforeMemoryRunKb = appRss();
  const memoryRequests = await requestsFile(
    "memory",
    memorySecrets.map((secret) => ({
      path: "/api/v1/orders/ord_00000000000000000000000000000000",
      headers: { authorization: `Bearer ${secret}` },
    })),
  );
  // One pass: as many requests as accounts, each connection cycling through its slice of keys.
  const memoryLoad = await runLoad(app, {
    connections,
    seconds: 0,
    warmupSeconds: 0,
    cycle: true,
    requestsFile: memoryRequests,
    amount: memorySecrets.length,
  });
  await sleep(2000);
  const afterMemoryRunKb = appRss();
  await app.stop();
  servers.splice(servers.indexOf(app), 1);

  log("cold start and a fresh clone's npm install");
  const coldStartSeconds = await coldStart(secrets[secrets.length - 1]!);
  const installSeconds = await freshInstall();

  const figure = (pick: (round: Round) => number) => spread(perRound.map(pick));
  const throughput = figure((r) => r.inProcess.requests_per_s / r.floor.requests_per_s);
  const p99 = figure((r) => r.inProcess.latency_ms.p99 / r.floor.latency_ms.p99);
  const cpu = figure((r) => cpuMsPerRequest(r.inProcess) / cpuMsPerRequest(r.floor));
  const withRedis = (pick: (round: Round & { redis: LoadResult }) => number) =>
    redisApp ? figure((r) => pick(r as Round & { redis: LoadResult })) : undefined;
  const redisThroughput = withRedis((r) => r.redis.requests_per_s / r.floor.requests_per_s);
  const withBaseline = (pick: (round: Round & { baseline: LoadResult }) => number) =>
    baselineApp ? figure((r) => pick(r as Round & { baseline: LoadResult })) : undefined;
  const abThroughput = withBaseline((r) => r.inProcess.requests_per_s / r.baseline.requests_per_s);
  const abCpu = withBaseline((r) => cpuMsPerRequest(r.inProcess) / cpuMsPerRequest(r.baseline));
  const abP99 = withBaseline((r) => r.inProcess.latency_ms.p99 / r.baseline.latency_ms.p99);
  const cpu429 = figure((r) => cpuMsPerRequest(r.refused) / cpuMsPerRequest(r.inProcess));
  const statements = figure((r) => r.statementsPerRequest);
  const inProcessCpu = median(perRound.map((r) => cpuMsPerRequest(r.inProcess)));
  const mixed429 = mixedLoad.requests_total - mixedLoad.status_2xx;
  const mb = (kb: number) => round(kb / 1024, 1);
  const goal = (figure: Spread | undefined, test: (value: number) => boolean, text: string) =>
    figure ? { goal: text, met: test(figure.median) } : "not run (no REDIS_URL)";
  await report(
    "api-accounts",
    {
      request: `GET /api/v1/orders?limit=${LIMIT}`,
      accounts: buyers.length,
      keys_per_connection: Math.floor(buyers.length / connections),
      connections,
      seconds,
      rate_limit: "on, no exemption (60/min per account)",
      rounds: perRound.map((r) => ({
        floor: describeLoad(r.floor),
        in_process: describeLoad(r.inProcess),
        redis: r.redis && describeLoad(r.redis),
        only_429s: describeLoad(r.refused),
        statements_per_request: round(r.statementsPerRequest, 2),
      })),
      ratios: {
        in_process_throughput_to_floor: throughput,
        in_process_p99_to_floor: p99,
        cpu_per_request_in_process_to_floor: cpu,
        redis_throughput_to_floor: redisThroughput,
        redis_p99_to_floor: withRedis((r) => r.redis.latency_ms.p99 / r.floor.latency_ms.p99),
        cpu_per_request_redis_to_floor: withRedis((r) => cpuMsPerRequest(r.redis) / cpuMsPerRequest(r.floor)),
        cpu_429_to_200: cpu429,
      },
      statements_per_request: {
        ...statements,
        note: "transactions PostgreSQL committed during the in-process run, per request sent",
      },
      goals: {
        in_process_throughput: goal(throughput, (value) => value >= 0.85, ">= 0.85"),
        in_process_p99: goal(p99, (value) => value <= 1.3, "<= 1.3"),
        in_process_cpu_per_request: goal(cpu, (value) => value <= 2.5, "<= 2.5"),
        redis_throughput: goal(redisThroughput, (value) => value >= 0.75, ">= 0.75"),
      },
      baseline: baselineDir
        ? {
            dir: baselineDir,
            commit: execFileSync("git", ["-C", baselineDir, "rev-parse", "HEAD"], { encoding: "utf8" }).trim(),
            this_commit: execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim(),
            rounds: perRound.map((r) => describeLoad(r.baseline!)),
            throughput_to_baseline: abThroughput,
            cpu_per_request_to_baseline: abCpu,
            p99_to_baseline: abP99,
            goals: {
              throughput: goal(abThroughput, (value) => value >= 0.95, ">= 0.95"),
              cpu_per_request: goal(abCpu, (value) => value <= 1.05, "<= 1.05"),
            },
          }
        : "not run (no --baseline)",
      limiter_cost: limiter,
      over_limit: {
        share_of_requests_from_over_limit_accounts: OVER_LIMIT_SHARE,
        mixed: describeLoad(mixedLoad),
        mixed_429s: mixed429,
        cpu_ms_per_200: round(inProcessCpu, 3),
        cpu_ms_per_429: round(median(perRound.map((r) => cpuMsPerRequest(r.refused))), 3),
      },
      memory: {
        server_rss_idle_mb: mb(idleRssKb),
        server_rss_peak_under_load_mb: mb(loadPeakRssKb),
        accounts_in_memory_run: memorySecrets.length,
        memory_run_requests: memoryLoad.requests_total,
        memory_run_404s: memoryLoad.status_4xx,
        server_rss_before_memory_run_mb: mb(beforeMemoryRunKb),
        server_rss_after_memory_run_mb: mb(afterMemoryRunKb),
        growth_mb: mb(afterMemoryRunKb - beforeMemoryRunKb),
      },
      cold_start: {
        npm_start_to_first_api_answer_s: round(coldStartSeconds, 2),
        fresh_clone_npm_install_s: installSeconds === undefined ? "not run" : round(installSeconds, 1),
      },
    },
    `api-accounts (${buyers.length} accounts, limit on, ${rounds} interleaved rounds): in-process ${formatSpread(throughput)} of the floor's throughput, ` +
      `p99 ${formatSpread(p99)}, CPU/request ${formatSpread(cpu)}; ` +
      (redisThroughput ? `Redis ${formatSpread(redisThroughput)}; ` : "") +
      (abThroughput && abCpu
        ? `against the baseline: throughput ${formatSpread(abThroughput)}, CPU/request ${formatSpread(abCpu)}; `
        : "") +
      `${statements.median} statements/request; CPU 429 to 200 ${formatSpread(cpu429)}; ` +
      `RSS idle ${mb(idleRssKb)} MB, load ${mb(loadPeakRssKb)} MB, +${mb(afterMemoryRunKb - beforeMemoryRunKb)} MB after ${memorySecrets.length} accounts; ` +
      `cold start ${round(coldStartSeconds, 1)} s`,
  );
} finally {
  for (const server of servers.reverse()) await server.stop();
  await deleteBenchKeys(pool, keys.values());
  await pool.query(`DELETE FROM buyers WHERE email LIKE $1`, [memoryBuyerEmail]);
  await pool.end();
  await fs.rm(workDir, { recursive: true, force: true });
}
// The Redis limiter measured in limiterCost() keeps its connection open (one per process, by design).
process.exit(0);
