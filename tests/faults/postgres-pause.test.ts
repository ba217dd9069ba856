import { afterAll, beforeAll, expect, it } from "vitest";
import { sqlQuery } from "../../lib/db/client";
import { migrate } from "../../lib/db/migrate";
import { lockTable, type TableLock } from "../helpers/database";
import { apiKey, buyer, order, prepareTestEnvironment, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { startLoad, type LoadRequest } from "./helpers/load";
import { startPostgresCluster, type TestPostgresCluster } from "./helpers/postgres-cluster";
import { reportFault, tally } from "./helpers/report";

/**
 * Fault: the app's PostgreSQL freezes, every process of its cluster SIGSTOPped for 10 s (a host
 * stalled by its hypervisor, a storage hang), under a steady API load, then resumes. Every request
 * meanwhile is answered 503 service_unavailable with Retry-After within the deadlines (1 s here),
 * never another 5xx, never a hang; service is full again after the resume; and the usage counts
 * (lib/keys/usage.ts, written every 5 s) lose at most one flush interval of answers.
 */

const TIMEOUTS = { DATABASE_STATEMENT_TIMEOUT_MS: "1000", DATABASE_CONNECT_TIMEOUT_MS: "1000" };
const PAUSE_MS = 10_000;
/** The usage counts' documented flush interval (USAGE_FLUSH_INTERVAL_MS's default): what a failure may lose. */
const FLUSH_INTERVAL_MS = 5_000;
/** Far above the 1 s deadlines (at most about 2 s: statement timeout plus the client's margin) on a loaded machine. */
const ANSWER_WITHIN_MS = 10_000;
/** Full service means every request sent in this long a stretch after the resume answered 200. */
const SERVING_STRETCH_MS = 3_000;
const RECOVER_WITHIN_MS = 60_000;
const ACCOUNTS = 4;

let cluster: TestPostgresCluster;
let env: TestEnvironment;
let server: TestServer | undefined;
let accountIds: string[];
let keys: string[];

beforeAll(async () => {
  cluster = await startPostgresCluster();
  await migrate(cluster.url);
  env = await prepareTestEnvironment({ url: cluster.url, name: "dataset_access", drop: async () => {} }, "pg_pause");
  const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, (_, index) => buyer(`pause-${index}`)));
  accountIds = accounts.map((account) => account.id);
  keys = [];
  for (const account of accounts) {
    await order(account.id);
    keys.push((await apiKey(account.id)).secret);
  }
}, 180_000);

afterAll(async () => {
  await cluster?.resume();
  await server?.stop();
  await env?.cleanup();
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function startApp(): Promise<TestServer> {
  return startServer({
    databaseUrl: cluster.url,
    storageDir: env.storageDir,
    env: {
      ...TIMEOUTS,
      REDIS_URL: "",
      JOBS_WORKER: "off",
      USAGE_FLUSH_INTERVAL_MS: String(FLUSH_INTERVAL_MS),
      // The load is far above 60/minute: the rate limit is not the subject here.
      RATE_LIMIT_EXEMPT_BUYERS: accountIds.join(","),
    },
  });
}

/** Six clients listing orders (up to about 250 requests a second here), over the accounts' keys. */
function startOrdersLoad(app: TestServer) {
  return startLoad({
    workers: 6,
    paceMs: 20,
    maxDurationMs: 150_000,
    maxRequests: 50_000,
    timeoutMs: ANSWER_WITHIN_MS,
    send: (index, signal) =>
      fetch(`${app.url}/api/v1/orders`, { headers: { Authorization: `Bearer ${keys[index % ACCOUNTS]}` }, signal }),
  });
}

/** The usage counts in the database by outcome, all keys together (the cluster holds only this file's keys). */
async function recordedUsage(): Promise<Record<string, number>> {
  const rows = await sqlQuery<{ outcome: string; count: number }>(
    "SELECT outcome::text AS outcome, sum(count)::int AS count FROM api_key_usage GROUP BY 1",
    [],
  );
  return Object.fromEntries(rows.map((row) => [row.outcome, row.count]));
}

/**
 * Stops the server (SIGTERM: it writes the counts still in the process), then compares the 2xx
 * counts written since `before` with the 200 answers the client got.
 */
async function usageAfterStop(app: TestServer, requests: LoadRequest[], before: Record<string, number>) {
  await app.stop();
  const after = await recordedUsage();
  const answered200 = requests.filter((request) => request.status === 200).length;
  const recorded2xx = (after["2xx"] ?? 0) - (before["2xx"] ?? 0);
  return {
    answered_200: answered200,
    recorded_2xx: recorded2xx,
    lost: Math.max(0, answered200 - recorded2xx),
    duplicated: Math.max(0, recorded2xx - answered200),
    failed_flushes: app.output().match(/API usage counts (not recorded|may be lost)/g)?.length ?? 0,
  };
}

/** Waits (bounded) until every request sent in the last SERVING_STRETCH_MS, and at least a few, answered 200. */
async function waitForFullService(requests: LoadRequest[], since: number): Promise<boolean> {
  const deadline = Date.now() + RECOVER_WITHIN_MS;
  while (Date.now() < deadline) {
    await sleep(250);
    const stretchStart = Date.now() - SERVING_STRETCH_MS;
    if (stretchStart < since) continue;
    const stretch = requests.filter((request) => request.sentAt >= stretchStart && request.answeredAt > 0);
    if (stretch.length >= 10 && stretch.every((request) => request.status === 200)) return true;
  }
  return false;
}

/** The most 200 answers received within any FLUSH_INTERVAL_MS: what losing one flush may cost. */
function most200sPerFlushInterval(requests: LoadRequest[]): number {
  const times = requests.filter((request) => request.status === 200).map((request) => request.answeredAt);
  times.sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < times.length; last++) {
    while (times[last]! - times[first]! >= FLUSH_INTERVAL_MS) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

const outcomes = (requests: LoadRequest[]) => tally(requests.map((request) => request.status ?? request.error!));
const latency = (request: LoadRequest) => request.answeredAt - request.sentAt;

it("a frozen database: 503 with Retry-After in time during the pause, full service after, usage counts kept", async () => {
  const before = await recordedUsage();
  const app = (server = await startApp());
  const load = startOrdersLoad(app);
  let pausedAt = 0;
  let resumingAt = 0;
  let recovered = false;
  let frozen: number[] = [];
  try {
    // Past one flush of the usage counts, so the pause meets counts already written and some not.
    await sleep(FLUSH_INTERVAL_MS + 1_000);
    frozen = await cluster.pause();
    pausedAt = Date.now();
    await sleep(PAUSE_MS);
    resumingAt = Date.now();
    await cluster.resume();
    recovered = await waitForFullService(load.requests, resumingAt);
  } finally {
    await cluster.resume();
    await load.stop();
  }
  const requests = load.requests;
  const usage = await usageAfterStop(app, requests, before);
  const duringPause = requests.filter((request) => request.sentAt >= pausedAt && request.sentAt < resumingAt);
  const notServed = requests.filter((request) => request.status !== 200);
  const lossBound = most200sPerFlushInterval(requests);
  await reportFault("postgres-pause", {
    pause_ms: resumingAt - pausedAt,
    paused_processes: frozen.length,
    requests: requests.length,
    statuses: outcomes(requests),
    status_5xx: requests.filter((request) => (request.status ?? 0) >= 500).length,
    status_5xx_not_503: requests.filter((request) => (request.status ?? 0) >= 500 && request.status !== 503).length,
    errors: requests.filter((request) => request.error).length,
    during_pause: {
      requests: duringPause.length,
      statuses: outcomes(duringPause),
      max_latency_ms: Math.max(0, ...duringPause.map(latency)),
    },
    max_latency_ms: Math.max(0, ...requests.map(latency)),
    // From the resume to the last answer that was not a 200.
    recovery_ms: Math.max(resumingAt, ...notServed.map((request) => request.answeredAt)) - resumingAt,
    recovered,
    usage: { ...usage, documented_bound: lossBound },
  });

  expect(duringPause.length).toBeGreaterThan(0);
  expect(requests.filter((request) => request.error)).toEqual([]);
  expect(requests.filter((request) => request.status !== 200 && request.status !== 503)).toEqual([]);
  for (const request of duringPause) {
    expect(latency(request)).toBeLessThanOrEqual(ANSWER_WITHIN_MS);
    // Refused as the contract says, unless answered once the database was back.
    if (request.answeredAt < resumingAt || request.status !== 200) {
      expect(request).toMatchObject({ status: 503, code: "service_unavailable", retryAfter: "5" });
    }
  }
  expect(recovered).toBe(true);
  // Counts are never made up, and lose at most what one flush interval held.
  expect(usage.duplicated).toBe(0);
  expect(usage.lost).toBeLessThanOrEqual(lossBound);
});

it("usage writes blocked for three flush intervals (a migration's lock): answers go on and no count is lost", async () => {
  const before = await recordedUsage();
  const app = (server = await startApp());
  const load = startOrdersLoad(app);
  let migration: TableLock | undefined;
  let lockedMs = 0;
  try {
    await sleep(1_000);
    migration = await lockTable(cluster.url, "api_key_usage");
    const lockedAt = Date.now();
    await sleep(3 * FLUSH_INTERVAL_MS + 1_000);
    await migration.release();
    lockedMs = Date.now() - lockedAt;
    // One more flush, once the table is free.
    await sleep(FLUSH_INTERVAL_MS + 1_000);
  } finally {
    await migration?.release();
    await load.stop();
  }
  const requests = load.requests;
  const usage = await usageAfterStop(app, requests, before);
  await reportFault("postgres-usage-lock", {
    lock_ms: lockedMs,
    requests: requests.length,
    statuses: outcomes(requests),
    max_latency_ms: Math.max(0, ...requests.map(latency)),
    usage,
  });

  expect(outcomes(requests)).toEqual({ 200: requests.length });
  expect(usage.failed_flushes).toBeGreaterThan(0);
  expect(usage).toMatchObject({ lost: 0, duplicated: 0 });
});
