import { promises as fs } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { closeJobQueue } from "../lib/queue";
import { setOrderStatus } from "../lib/operator/orders";
import { createEndpoint } from "../lib/webhooks/endpoints";
import { disconnectDb } from "../lib/db/client";
import {
  BENCH_AUTH_SECRET,
  createBenchKeys,
  freshBenchDatabase,
  log,
  percentile,
  ratio,
  report,
  requireProductionBuild,
  round,
  startAppServer,
  type Server,
} from "./lib/common";
import { describeLoad, runLoad, type LoadResult } from "./lib/load";

/**
 * Push delivery at volume, in a database of its own (`dataset_access_bench_webhooks`):
 * 1. 10,000 `order.delivered` events (100 buyers x 100 orders), one endpoint per buyer: 100
 *    endpoints, all served by one receiver on loopback. The status changes are made from this
 *    process (as the operator CLI does), 8 at a time; the app server's in-process worker delivers.
 *    Reported: deliveries per second (first status change to last arrival) and the lag from each
 *    status change to its arrival (p50, p99).
 * 2. `GET /api/v1/orders?limit=50` (1,000 accounts with a key each, 50 connections, BENCH_SECONDS)
 *    with the worker delivering a stream of events during the load, against JOBS_WORKER=off.
 */
requireProductionBuild();
const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const BUYERS = 100;
const ORDERS_PER_BUYER = 100;
const LOAD_ACCOUNTS = 1_000;
const PARALLEL_CHANGES = 8;

// A fresh database each run: the counts below assume nothing from before.
const databaseUrl = await freshBenchDatabase("dataset_access_bench_webhooks");
process.env.DATABASE_URL = databaseUrl;
// One connection per status change in flight, and some for the job queue.
process.env.DATABASE_POOL_SIZE = String(PARALLEL_CHANGES + 4);
process.env.AUTH_SECRET = BENCH_AUTH_SECRET;
process.env.WEBHOOK_ALLOW_PRIVATE = "true";
process.env.WEBHOOK_ALLOW_INSECURE = "true";
const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-webhooks-"));

/** One receiver for every endpoint: records when each message (by webhook-id) first arrives. */
const arrivals = new Map<string, number>();
let duplicates = 0;
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const id = String(req.headers["webhook-id"]);
    if (arrivals.has(id)) duplicates++;
    else arrivals.set(id, Date.now());
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

async function seedBuyers(count: number, prefix: string, orders: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO buyers (email) SELECT $1 || g || '@example.com' FROM generate_series(1, $2) g RETURNING id`,
    [prefix, count],
  );
  const ids = rows.map(({ id }) => id);
  await pool.query(
    `INSERT INTO orders (buyer_id, name, status, paid_at)
     SELECT b, 'Bench order ' || g, 'unfinished', now() - g * interval '1 minute'
     FROM unnest($1::text[]) b, generate_series(1, $2) g`,
    [ids, orders],
  );
  return ids;
}

let app: Server | undefined;
try {
  // 1. Fan-out.
  const buyers = await seedBuyers(BUYERS, "bench-webhooks-", ORDERS_PER_BUYER);
  for (const [index, buyerId] of buyers.entries()) {
    await createEndpoint({ buyerId, url: `${receiverUrl}/hooks/${index}`, events: ["order.delivered"] });
  }
  const { rows: orders } = await pool.query<{ id: string }>(
    `SELECT id FROM orders WHERE buyer_id = ANY($1) ORDER BY random()`,
    [buyers],
  );
  app = await startAppServer({ databaseUrl, storageDir: path.join(workDir, "storage"), env: benchEnv() });
  log(`fan-out: ${orders.length} status changes, ${PARALLEL_CHANGES} at a time, to ${BUYERS} endpoints`);
  const changedAt = new Map<string, number>();
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL_CHANGES }, async () => {
      while (next < orders.length) {
        const order = orders[next++]!;
        changedAt.set(order.id, Date.now());
        await setOrderStatus(order.id, "delivered");
      }
    }),
  );
  const emittedIn = (Date.now() - started) / 1000;
  log(`all ${orders.length} changes committed in ${round(emittedIn, 1)} s; waiting for the deliveries`);
  // Wait while deliveries keep arriving; a minute without one ends the wait.
  let lastCount = -1;
  let lastProgress = Date.now();
  while (arrivals.size < orders.length && Date.now() - lastProgress < 60_000) {
    if (arrivals.size !== lastCount) [lastCount, lastProgress] = [arrivals.size, Date.now()];
    await new Promise((r) => setTimeout(r, 200));
  }
  if (arrivals.size < orders.length)
    log(`only ${arrivals.size} delivered; the server said:\n${app.output().slice(-3000)}`);
  const { rows: messages } = await pool.query<{ id: string; order_id: string }>(
    `SELECT id, payload::json -> 'data' ->> 'id' AS order_id FROM webhook_messages`,
  );
  const lags = messages
    .filter(({ id }) => arrivals.has(id))
    .map(({ id, order_id }) => arrivals.get(id)! - changedAt.get(order_id)!)
    .sort((a, b) => a - b);
  const lastArrival = Math.max(...arrivals.values());
  const fanOut = {
    events: orders.length,
    endpoints: BUYERS,
    delivered: arrivals.size,
    duplicates,
    status_changes_per_s: round(orders.length / emittedIn, 1),
    deliveries_per_s: round(arrivals.size / ((lastArrival - started) / 1000), 1),
    lag_ms: { p50: percentile(lags, 50), p99: percentile(lags, 99), max: lags.at(-1) },
    jobs_concurrency: Number(benchEnv().JOBS_CONCURRENCY),
  };
  log(`fan-out: ${JSON.stringify(fanOut)}`);
  await app.stop();
  app = undefined;

  // 2. The API with and without the worker delivering beside it.
  const accounts = await seedBuyers(LOAD_ACCOUNTS, "bench-webhooks-load-", 60);
  const keys = await createBenchKeys(pool, accounts);
  const requestsFile = path.join(workDir, "requests.json");
  await fs.writeFile(
    requestsFile,
    JSON.stringify(
      accounts.map((buyer) => ({
        path: "/api/v1/orders?limit=50",
        headers: { authorization: `Bearer ${keys.get(buyer)}` },
      })),
    ),
  );
  const { rows: streamOrders } = await pool.query<{ id: string }>(
    `SELECT o.id FROM orders o WHERE o.buyer_id = ANY($1) AND o.status = 'delivered'`,
    [buyers],
  );
  const load: Record<"worker_off" | "worker_on", LoadResult> = {} as never;
  for (const mode of ["worker_off", "worker_on"] as const) {
    app = await startAppServer({
      databaseUrl,
      storageDir: path.join(workDir, "storage"),
      env: { ...benchEnv(), JOBS_WORKER: mode === "worker_on" ? "on" : "off" },
    });
    // Events flow during the whole load in both runs (refunds, then re-deliveries): only the worker differs.
    let streaming = true;
    let emitted = 0;
    const stream = (async () => {
      while (streaming) {
        const order = streamOrders[emitted % streamOrders.length]!;
        await setOrderStatus(order.id, emitted % 2 === 0 ? "refunded" : "delivered");
        emitted++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    log(`list load, ${mode}`);
    load[mode] = await runLoad(app, { connections: 50, seconds, warmupSeconds: 2, cycle: true, requestsFile });
    streaming = false;
    await stream;
    await app.stop();
    app = undefined;
  }
  const throughput = ratio(load.worker_on.requests_per_s, load.worker_off.requests_per_s);
  await report(
    "webhooks",
    {
      fan_out: fanOut,
      list_with_worker: describeLoad(load.worker_on),
      list_without_worker: describeLoad(load.worker_off),
      list_throughput_worker_on_to_off: throughput,
      note: "2 cores shared by the app (with its worker), PostgreSQL, the receiver and the load client",
    },
    `webhooks: ${fanOut.delivered}/${fanOut.events} delivered at ${fanOut.deliveries_per_s}/s, lag p50 ${fanOut.lag_ms.p50} ms p99 ${fanOut.lag_ms.p99} ms; list with the worker ${throughput}x of without`,
  );
} finally {
  await app?.stop();
  await closeJobQueue();
  await disconnectDb();
  await pool.end();
  receiver.closeAllConnections();
  receiver.close();
  await fs.rm(workDir, { recursive: true, force: true });
}

function benchEnv(): Record<string, string> {
  return {
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
    JOBS_CONCURRENCY: process.env.JOBS_CONCURRENCY ?? "100",
    KEY_LIFECYCLE_CRON: "0 0 1 1 *",
    LOG_LEVEL: "warn",
  };
}
