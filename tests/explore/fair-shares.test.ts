import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

/**
 * Fair shares in the data engine (contract Part 8) on the production server: one account's flood
 * is bounded to 1 running and 4 waiting queries and refused past that (429, not counted toward its
 * rate limit) while another account's query runs; a query whose client left frees its place and
 * its process; a wide answer is cut at its byte budget; a slow reader holds only its own place.
 * One query process, so every one of these shares it.
 */

let env: TestEnvironment;
let server: TestServer;
let flooderOrder: string;
let flooderKey: string;
let otherOrder: string;
let otherKey: string;
const METRICS_TOKEN = "fair-shares-metrics";

/** About 20 s of one core (the limit below is 4): it ends as query_timeout unless its client leaves. */
const SLOW = "SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3";
/** 300 rows of 1,000 columns of 1,000 characters: 300 MB of JSON if nothing cut it. */
const WIDE = `WITH x AS (SELECT repeat('x', 1000) s FROM range(300)) SELECT ${Array(1000).fill("s").join(", ")} FROM x`;

beforeAll(async () => {
  env = await createTestEnvironment("explore-fair-shares");
  const flooder = await buyer("flooder");
  const other = await buyer("fair-other");
  flooderOrder = (await order(flooder.id, { name: "Flooded" })).id;
  otherOrder = (await order(other.id, { name: "Quiet" })).id;
  flooderKey = (await apiKey(flooder.id)).secret;
  otherKey = (await apiKey(other.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      JOBS_WORKER: "off",
      METRICS_TOKEN,
      DATASET_QUERY_SECONDS: "4",
      DATASET_QUERY_KILL_GRACE_SECONDS: "1",
      DATASET_QUERY_PROCESSES: "1",
    },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const sql = (orderId: string, key: string, q: string, init: RequestInit = {}) =>
  fetch(`${server.url}/api/v1/orders/${orderId}/sql?${new URLSearchParams({ q })}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}` },
  });
const flooderSql = (q: string, init?: RequestInit) => sql(flooderOrder, flooderKey, q, init);
const otherSql = (q: string) => sql(otherOrder, otherKey, q);

async function metric(name: string): Promise<string[]> {
  const text = await (
    await fetch(`${server.url}/api/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text();
  return text.split("\n").filter((line) => line.startsWith(name));
}

describe("admission per account", () => {
  it("runs 1 and queues 4 of one account's queries, refuses the rest, and answers another account meanwhile", async () => {
    const flood = Array.from({ length: 5 }, () => flooderSql(SLOW));
    // The five are admitted first (fetch sends them at once); the next ones find the account full.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const refusals = await Promise.all([flooderSql(SLOW), flooderSql(SLOW)]);
    for (const refusal of refusals) {
      const body = (await refusal.json()) as { code: string; detail: string };
      expect(refusal.status, JSON.stringify(body)).toBe(429);
      expect(body.code).toBe("too_many_queries");
      expect(body.detail).toMatch(/1 query running and 4 waiting/);
      expect(Number(refusal.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      // Not counted toward the 60 a minute (lib/ratelimit's refund, unit-tested): no RateLimit header.
      expect(refusal.headers.get("ratelimit")).toBeNull();
    }
    // The other account's query is taken in turn, before the flood's second: it answers, not 503.
    const theirs = await otherSql("SELECT 42 AS answer");
    expect(theirs.status).toBe(200);
    expect(await theirs.json()).toMatchObject({ rows: [[42]], truncated: false });
    const statuses = await Promise.all(flood.map((response) => response.then((r) => r.status)));
    expect(statuses).toEqual([422, 422, 422, 422, 422]);
    expect(await metric('engine_queries_total{door="sql",outcome="refused"}')).toEqual([
      'engine_queries_total{door="sql",outcome="refused"} 2',
    ]);
  }, 120_000);
});

describe("a client that leaves", () => {
  it("frees its running place and its process: the account's next query runs at once", async () => {
    const client = new AbortController();
    const slow = flooderSql(SLOW, { signal: client.signal }).catch((error: Error) => error.name);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    client.abort();
    expect(await slow).toBe("AbortError");
    const started = Date.now();
    const next = await flooderSql("SELECT 7 AS seven");
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ rows: [[7]] });
    // Well before the slow query's own 4 s would have ended.
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(await metric('engine_queries_total{door="sql",outcome="cancelled"}')).toEqual([
      'engine_queries_total{door="sql",outcome="cancelled"} 1',
    ]);
  }, 60_000);

  it("leaves the queue while it waits", async () => {
    const running = flooderSql(SLOW);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const clients = Array.from({ length: 4 }, () => new AbortController());
    const waiting = clients.map((client) => flooderSql(SLOW, { signal: client.signal }).catch(() => "left"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    clients.forEach((client) => client.abort());
    expect(await Promise.all(waiting)).toEqual(["left", "left", "left", "left"]);
    // The queue is empty again: four more are admitted, not refused.
    const again = Array.from({ length: 4 }, () => flooderSql("SELECT 1"));
    expect((await running).status).toBe(422);
    expect(await Promise.all(again.map((response) => response.then((r) => r.status)))).toEqual([200, 200, 200, 200]);
  }, 60_000);
});

describe("the answer budget", () => {
  it("cuts a 300 MB answer at 8 MiB, saying so", async () => {
    const response = await flooderSql(WIDE);
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(200);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(8 * 1024 * 1024);
    const body = JSON.parse(text) as { rows: unknown[][]; truncated: boolean; truncated_reason: string };
    expect(body).toMatchObject({ truncated: true, truncated_reason: "bytes" });
    expect(body.rows.length).toBeGreaterThan(0);
    expect(body.rows.length).toBeLessThan(300);
  }, 60_000);

  it("says rows when the limit cut them", async () => {
    const response = await flooderSql("SELECT * FROM range(5)", {});
    expect(await response.json()).toMatchObject({ truncated: false });
    const limited = await fetch(
      `${server.url}/api/v1/orders/${flooderOrder}/sql?${new URLSearchParams({ q: "SELECT * FROM range(5)", limit: "2" })}`,
      { headers: { Authorization: `Bearer ${flooderKey}` } },
    );
    expect(await limited.json()).toMatchObject({ rows: [[0], [1]], truncated: true, truncated_reason: "rows" });
  });
});

describe("a slow reader", () => {
  it("holds its own account's place, never another account's", async () => {
    // A client that reads nothing of an 8 MiB answer: the socket's buffers fill and the answer waits.
    const url = new URL(`${server.url}/api/v1/orders/${flooderOrder}/sql?${new URLSearchParams({ q: WIDE })}`);
    const stalled = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = http.get(url, { headers: { Authorization: `Bearer ${flooderKey}` } }, resolve);
      request.on("error", reject);
    });
    stalled.pause();
    expect(stalled.statusCode).toBe(200);
    const theirs = await otherSql("SELECT 43");
    expect(await theirs.json()).toMatchObject({ rows: [[43]] });
    // The flooder's next query waits for its reader; once the reader leaves, it runs.
    const mine = flooderSql("SELECT 44");
    const early = await Promise.race([
      mine.then(() => "answered"),
      new Promise((r) => setTimeout(r, 1_000, "waiting")),
    ]);
    expect(early).toBe("waiting");
    stalled.destroy();
    expect(await (await mine).json()).toMatchObject({ rows: [[44]] });
  }, 60_000);
});
