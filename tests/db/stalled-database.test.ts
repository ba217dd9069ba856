import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment, lockTable } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, type TestServer } from "../helpers/server";
import { startStallingProxy, type StallingProxy } from "../helpers/stalling-proxy";

/**
 * The fault test: the production server in front of a database that stalls, once by a lock a
 * migration would hold, once by a network that stops carrying packets (a proxy that holds every
 * byte). With 1-second timeouts, API requests and the health check answer 503 instead of hanging,
 * the stalled connections are closed, and the server serves again once the stall ends.
 */

const TIMEOUTS = { DATABASE_STATEMENT_TIMEOUT_MS: "1000", DATABASE_CONNECT_TIMEOUT_MS: "1000" };
/** Far above the 1 s timeouts (a loaded machine), far below "hangs": a request waiting longer fails the test. */
const ANSWER_WITHIN_MS = 15_000;

let env: TestEnvironment;
let proxy: StallingProxy;
let server: TestServer;
let key: string;

beforeAll(async () => {
  env = await createTestEnvironment("db_stall");
  const a = await buyer("stall");
  await order(a.id);
  key = (await apiKey(a.id)).secret;
  const database = new URL(env.database.url);
  proxy = await startStallingProxy({ host: database.hostname, port: Number(database.port || 5432) });
  server = await startServer({
    databaseUrl: proxy.url(env.database.url),
    storageDir: env.storageDir,
    // A small pool, so requests also queue for a connection while the others wait.
    // No job worker: its polling would open new connections through the stalled proxy all the
    // while (tests/webhooks covers the worker; here the subject is answering requests).
    env: { REDIS_URL: "", DATABASE_POOL_SIZE: "3", JOBS_WORKER: "off", ...TIMEOUTS },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await env?.cleanup();
});

const listOrders = () =>
  fetch(`${server.url}/api/v1/orders`, {
    headers: { Authorization: `Bearer ${key}` },
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
const health = () => fetch(`${server.url}/api/health`, { signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });

async function expectServiceUnavailable(response: Response) {
  expect(response.headers.get("retry-after")).toBe("5");
  await expectProblem(response, 503, "service_unavailable", /Retry after 5 seconds/);
}

async function expectServing() {
  const [orders, up] = await Promise.all([listOrders(), health()]);
  expect(orders.status).toBe(200);
  expect(((await orders.json()) as { data: unknown[] }).data).toHaveLength(1);
  expect(up.status).toBe(200);
}

describe("a stalled database", () => {
  it("a table lock (as a migration holds): 503 after the statement timeout, then serving again", async () => {
    await expectServing();
    const migration = await lockTable(env.database.url, "api_keys");
    try {
      // More requests than the pool has connections: those waiting for one give up in time too.
      const answers = await Promise.all(Array.from({ length: 6 }, listOrders));
      for (const answer of answers) await expectServiceUnavailable(answer);
    } finally {
      await migration.release();
    }
    await expectServing();
  });

  it("a network that stops carrying packets: API and health answer 503, stalled connections are closed, then serving again", async () => {
    await expectServing();
    expect(proxy.openConnections()).toBeGreaterThan(0);
    proxy.stall();
    try {
      const [orders, checks] = await Promise.all([
        Promise.all(Array.from({ length: 5 }, listOrders)),
        Promise.all(Array.from({ length: 3 }, health)),
      ]);
      for (const answer of orders) await expectServiceUnavailable(answer);
      for (const check of checks) {
        expect(check.status).toBe(503);
        expect(await check.json()).toEqual({ status: "degraded", database: "down" });
      }
      // Every connection that stalled (the API's, the health checks', idle ones) is given up.
      await expect.poll(() => proxy.openConnections(), { timeout: ANSWER_WITHIN_MS, interval: 100 }).toBe(0);
    } finally {
      proxy.resume();
    }
    await expectServing();
    // Logged as causes ("canceling statement due to statement timeout"), without SQL or stack frames.
    const output = await server.loggedSoFar();
    expect(output).toMatch(/database unavailable: Query read timeout/);
    expect(output).not.toMatch(/SELECT|\n\s+at /);
  });
});
