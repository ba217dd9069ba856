import { promises as fs } from "node:fs";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { descendants } from "../faults/helpers/processes";

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

/** Minutes of one core: each one here ends when its client leaves (the test aborts it), or at the 15 s limit. */
const SLOW = "SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3";
/** 300 rows of 1,000 columns of 1,000 characters: 300 MB of JSON if nothing cut it (about 1.7 s of DuckDB's time alone). */
const MIB = 1024 * 1024;
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
      // Well above the wide query's time on a loaded machine: none of these tests waits for the limit.
      DATASET_QUERY_SECONDS: "15",
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

/** The HTTP server's peak resident memory so far (VmHWM), in bytes: the launcher's child running http-server. */
async function serverPeakBytes(): Promise<number> {
  for (const pid of [server.pid!, ...(await descendants(server.pid!))]) {
    const command = await fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (!command.includes("http-server")) continue;
    const status = await fs.readFile(`/proc/${pid}/status`, "utf8");
    return Number(/^VmHWM:\s+(\d+)\s+kB/m.exec(status)![1]) * 1024;
  }
  throw new Error("The HTTP server's process was not found.");
}

/** A counter's value now on the server's metrics endpoint (0 before its first count). */
async function metric(series: string): Promise<number> {
  const text = await (
    await fetch(`${server.url}/api/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text();
  const line = text.split("\n").find((one) => one.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe("admission per account", () => {
  it("runs 1 and queues 4 of one account's queries, refuses the rest, and takes another account's next", async () => {
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const clients = Array.from({ length: 5 }, () => new AbortController());
    const ask = (client: AbortController) =>
      flooderSql(SLOW, { signal: client.signal }).catch((error: Error) => error.name);
    // The first runs (in the one process), the next four wait, the two after are refused.
    const flood = [ask(clients[0]!)];
    await pause(300);
    flood.push(...clients.slice(1).map(ask));
    await pause(300);
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
    // The other account's query waits for the process, then is taken before the flood's four, though they came first.
    const theirs = otherSql("SELECT 42 AS answer");
    await pause(300);
    clients[0]!.abort();
    const answer = await theirs;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ rows: [[42]], truncated: false });
    // The flood's second is running now, the rest waiting: none answered; they leave with their clients.
    clients.slice(1).forEach((client) => client.abort());
    expect(await Promise.all(flood)).toEqual(Array(5).fill("AbortError"));
    expect(await metric('engine_queries_total{door="sql",outcome="refused"}')).toBe(2);
  }, 120_000);
});

describe("a client that leaves", () => {
  it("frees its running place and its process: the account's next query runs at once", async () => {
    const cancelledBefore = await metric('engine_queries_total{door="sql",outcome="cancelled"}');
    const client = new AbortController();
    const slow = flooderSql(SLOW, { signal: client.signal }).catch((error: Error) => error.name);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    client.abort();
    expect(await slow).toBe("AbortError");
    const started = Date.now();
    const next = await flooderSql("SELECT 7 AS seven");
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ rows: [[7]] });
    // Well before the slow query's own 15 s would have ended: its process was freed, not waited for.
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(await metric('engine_queries_total{door="sql",outcome="cancelled"}')).toBe(cancelledBefore + 1);
  }, 60_000);

  it("leaves the queue while it waits", async () => {
    const first = new AbortController();
    const running = flooderSql(SLOW, { signal: first.signal }).catch((error: Error) => error.name);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const clients = Array.from({ length: 4 }, () => new AbortController());
    const waiting = clients.map((client) => flooderSql(SLOW, { signal: client.signal }).catch(() => "left"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    clients.forEach((client) => client.abort());
    expect(await Promise.all(waiting)).toEqual(["left", "left", "left", "left"]);
    // The queue is empty again: four more are admitted, not refused.
    const again = Array.from({ length: 4 }, () => flooderSql("SELECT 1"));
    first.abort();
    expect(await running).toBe("AbortError");
    expect(await Promise.all(again.map((response) => response.then((r) => r.status)))).toEqual([200, 200, 200, 200]);
  }, 60_000);
});

describe("the answer budget", () => {
  it("cuts a 300 MB answer at 8 MiB, saying so, the server's memory never near the whole", async () => {
    const peakBefore = await serverPeakBytes();
    const response = await flooderSql(WIDE);
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(200);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(8 * MIB);
    const body = JSON.parse(text) as { rows: unknown[][]; truncated: boolean; truncated_reason: string };
    expect(body).toMatchObject({ truncated: true, truncated_reason: "bytes" });
    expect(body.rows.length).toBeGreaterThan(0);
    expect(body.rows.length).toBeLessThan(300);
    // Built whole, the answer took the server from 0.2 to 3.35 GB; cut in the engine, a few times 8 MiB at most.
    expect((await serverPeakBytes()) - peakBefore).toBeLessThan(128 * MIB);
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
  // An answer larger than loopback's socket buffers can take (they grow to several MiB): the answer
  // budget raised for it, on a server of its own.
  let roomy: TestServer;
  beforeAll(async () => {
    roomy = await startServer({
      databaseUrl: env.database.url,
      storageDir: env.storageDir,
      env: {
        REDIS_URL: "",
        JOBS_WORKER: "off",
        DATASET_QUERY_PROCESSES: "1",
        QUERY_ANSWER_MAX_BYTES: String(96 * MIB),
      },
    });
  }, 180_000);
  afterAll(() => roomy?.stop());

  it("holds its own account's place, never another account's", async () => {
    // A client that reads nothing of a 60 MB answer: the socket's buffers fill and the answer waits.
    const columns = Array.from({ length: 60 }, (_, i) => `repeat('x', 1000) AS c${i}`).join(", ");
    const q = `SELECT ${columns} FROM range(1000)`;
    const url = new URL(`${roomy.url}/api/v1/orders/${flooderOrder}/sql?${new URLSearchParams({ q, limit: "1000" })}`);
    const stalled = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = http.get(url, { headers: { Authorization: `Bearer ${flooderKey}` } }, resolve);
      request.on("error", reject);
    });
    stalled.pause();
    expect(stalled.statusCode).toBe(200);
    const on = (orderId: string, key: string, text: string) =>
      fetch(`${roomy.url}/api/v1/orders/${orderId}/sql?${new URLSearchParams({ q: text })}`, {
        headers: { Authorization: `Bearer ${key}` },
      });
    const theirs = await on(otherOrder, otherKey, "SELECT 43");
    expect(await theirs.json()).toMatchObject({ rows: [[43]] });
    // The flooder's next query waits for its reader (this cannot pass early); once the reader leaves, it runs.
    const mine = on(flooderOrder, flooderKey, "SELECT 44");
    const early = await Promise.race([
      mine.then(() => "answered"),
      new Promise((resolve) => setTimeout(resolve, 1_000, "waiting")),
    ]);
    expect(early).toBe("waiting");
    stalled.destroy();
    expect(await (await mine).json()).toMatchObject({ rows: [[44]] });
  }, 60_000);
});
