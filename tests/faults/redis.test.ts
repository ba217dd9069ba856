import IORedis from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DATASETS_RATE_LIMIT } from "../../lib/contract";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { startOfAFixedWindow } from "../helpers/rate-limit";
import { startServer, type TestServer } from "../helpers/server";
import { startLoad, type LoadRequest } from "./helpers/load";
import { startRedisServer, type TestRedisServer } from "./helpers/redis-server";
import { reportFault, tally } from "./helpers/report";

/**
 * Fault: the Redis that two app instances share for the rate limit dies (SIGKILL) under load and
 * comes back, empty, on the same port. No request fails or hangs at any point; while Redis is down
 * each instance enforces the 60/minute limit on its own (lib/ratelimit: the in-process fallback,
 * so an account may get 60 per instance); once Redis answers again the limit is shared again.
 */

const { limit: LIMIT, windowSeconds: WINDOW_SECONDS } = DATASETS_RATE_LIMIT;
/** A request must be answered within this: the limiter gives Redis at most 1 s before it falls back. */
const ANSWER_WITHIN_MS = 10_000;
/** Accounts of the background load, enough that each stays far below 60 a minute (about 25 here). */
const LOAD_ACCOUNTS = 40;
const OUTAGE_MS = 10_000;
/** Load before the kill and after the recovery, to compare with the outage. */
const STEADY_MS = 3_000;
const RECOVER_WITHIN_MS = 30_000;

let redis: TestRedisServer;
let env: TestEnvironment;
let instances: TestServer[] = [];
let admin: IORedis | undefined;

beforeAll(async () => {
  redis = await startRedisServer();
  env = await createTestEnvironment("fault_redis");
  instances = await Promise.all(
    [1, 2].map(() =>
      startServer({
        databaseUrl: env.database.url,
        storageDir: env.storageDir,
        env: { REDIS_URL: redis.url, JOBS_WORKER: "off" },
      }),
    ),
  );
}, 180_000);

afterAll(async () => {
  admin?.disconnect();
  await Promise.all(instances.map((instance) => instance.stop()));
  await redis?.stop();
  await env?.cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Account = { id: string; key: string };
async function account(label: string): Promise<Account> {
  const created = await buyer(label);
  return { id: created.id, key: (await apiKey(created.id)).secret };
}

const listOrders = (instance: TestServer, key: string, signal = AbortSignal.timeout(ANSWER_WITHIN_MS)) =>
  fetch(`${instance.url}/api/v1/orders?limit=1`, { headers: { Authorization: `Bearer ${key}` }, signal });

type LimitRun = { statuses: number[]; refusal?: string };

/**
 * 61 requests of one account, one after another, the i-th through `targets[i]` (the last target
 * repeats): their statuses, and the problem code of the 61st.
 */
async function limitRun(targets: TestServer[], key: string): Promise<LimitRun> {
  const statuses: number[] = [];
  for (let i = 0; i < LIMIT; i++) {
    const response = await listOrders(targets[Math.min(i, targets.length - 1)]!, key);
    statuses.push(response.status);
    await response.arrayBuffer();
  }
  const last = await listOrders(targets.at(-1)!, key);
  statuses.push(last.status);
  return { statuses, refusal: ((await last.json()) as { code?: string }).code };
}

/** What a run gets when the limit holds: 60 answers, then the 61st refused. */
const LIMITED: LimitRun = { statuses: [...Array<number>(LIMIT).fill(200), 429], refusal: "rate_limited" };
const allowed = (run?: LimitRun) => run?.statuses.filter((status) => status === 200).length;

/** Waits until `instance` counts in Redis again: a request of its own probe account leaves a key there. */
async function waitUntilCountingInRedis(instance: TestServer, probe: Account): Promise<boolean> {
  admin ??= new IORedis(redis.url, { maxRetriesPerRequest: 1, connectTimeout: 1000 });
  const deadline = Date.now() + RECOVER_WITHIN_MS;
  while (Date.now() < deadline) {
    await (await listOrders(instance, probe.key)).arrayBuffer();
    const counted = await admin.keys(`ratelimit:datasets:${probe.id}:*`).catch(() => []);
    if (counted.length > 0) return true;
    await sleep(100);
  }
  return false;
}

it("Redis killed and restarted under load: no failed request, per-instance limits meanwhile, shared again after", async () => {
  const loadAccounts = await Promise.all(Array.from({ length: LOAD_ACCOUNTS }, (_, i) => account(`load-${i}`)));
  const [sharedBefore, duringOutage, sharedAfter, probeA, probeB] = (await Promise.all(
    ["shared-before", "outage", "shared-after", "probe-a", "probe-b"].map(account),
  )) as [Account, Account, Account, Account, Account];
  const [a, b] = instances as [TestServer, TestServer];
  const load = startLoad({
    workers: 4,
    paceMs: 250,
    maxDurationMs: 240_000,
    maxRequests: 20_000,
    timeoutMs: ANSWER_WITHIN_MS,
    send: (index, signal) => listOrders(instances[index % 2]!, loadAccounts[index % LOAD_ACCOUNTS]!.key, signal),
  });
  let killedAt = 0;
  let restartedAt = 0;
  let recoveredAt = 0;
  // 60 through A and the 61st through B: one limit when shared.
  const sharedRun = [...Array<TestServer>(LIMIT).fill(a), b];
  const runs: { before?: LimitRun; outageA?: LimitRun; outageB?: LimitRun; after?: LimitRun } = {};
  try {
    await startOfAFixedWindow(20_000, WINDOW_SECONDS);
    runs.before = await limitRun(sharedRun, sharedBefore.key);
    await sleep(STEADY_MS);

    await redis.kill();
    killedAt = Date.now();
    await startOfAFixedWindow(20_000, WINDOW_SECONDS);
    // One account through A, then through B: each instance limits on its own.
    runs.outageA = await limitRun([a], duringOutage.key);
    runs.outageB = await limitRun([b], duringOutage.key);
    await sleep(Math.max(0, killedAt + OUTAGE_MS - Date.now()));

    await redis.restart();
    restartedAt = Date.now();
    const back = await Promise.all([waitUntilCountingInRedis(a, probeA), waitUntilCountingInRedis(b, probeB)]);
    recoveredAt = back.every(Boolean) ? Date.now() : 0;
    await sleep(STEADY_MS);
    await startOfAFixedWindow(20_000, WINDOW_SECONDS);
    runs.after = await limitRun(sharedRun, sharedAfter.key);
  } finally {
    await load.stop();
  }

  const background = load.requests;
  const sequences = Object.values(runs).flatMap((run) => run.statuses);
  const during = (from: number, to: number) =>
    background.filter((r) => r.sentAt >= from && r.sentAt < (to || Infinity));
  const outcomes = (requests: LoadRequest[]) => tally(requests.map((request) => request.status ?? request.error!));
  const latency = (request: LoadRequest) => request.answeredAt - request.sentAt;
  const logged = (pattern: RegExp) => instances.map((instance) => instance.output().match(pattern)?.length ?? 0);
  await reportFault("redis-kill-restart", {
    outage_ms: restartedAt - killedAt,
    requests: background.length + sequences.length,
    background_statuses: outcomes(background),
    limit_sequence_statuses: tally(sequences),
    status_5xx: [...background.map((r) => r.status ?? 0), ...sequences].filter((status) => status >= 500).length,
    errors: background.filter((request) => request.error).length,
    during_outage: {
      requests: during(killedAt, restartedAt).length,
      statuses: outcomes(during(killedAt, restartedAt)),
      max_latency_ms: Math.max(0, ...during(killedAt, restartedAt).map(latency)),
    },
    max_latency_ms: Math.max(0, ...background.map(latency)),
    // 60 through A, then the 61st through B, with Redis up: its status and code.
    shared_before: { sixty_first: runs.before?.statuses[LIMIT], code: runs.before?.refusal },
    shared_after: { sixty_first: runs.after?.statuses[LIMIT], code: runs.after?.refusal },
    // One account during the outage: what each instance allowed of 61 (documented: the limit holds per instance).
    allowed_per_instance_during_outage: { a: allowed(runs.outageA), b: allowed(runs.outageB) },
    recovery_ms: recoveredAt ? recoveredAt - restartedAt : null,
    fallback_warnings_per_instance: logged(/Rate limiter: Redis unavailable/g),
    shared_again_logs_per_instance: logged(/Rate limiter: Redis answers again/g),
  });

  expect(background.filter((request) => request.error || request.status !== 200)).toEqual([]);
  expect(Math.max(...background.map(latency))).toBeLessThan(ANSWER_WITHIN_MS);
  expect(runs).toEqual({ before: LIMITED, outageA: LIMITED, outageB: LIMITED, after: LIMITED });
  expect(recoveredAt).toBeGreaterThan(0);
});
