import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import {
  benchDatabaseUrl,
  createBenchKeys,
  deleteBenchKeys,
  log,
  median,
  percentile,
  ratio,
  report,
  requireProductionBuild,
  round,
  startAppServer,
  startFloorServer,
  type Server,
} from "./lib/common";
import { orderPageStatement } from "./lib/list-sql";
import { DEEP_ORDERS, ensureSeeded, seededBuyers } from "./lib/seed";

/**
 * Cost of a deep page: `GET /api/v1/orders?limit=50&offset=10000` against `offset=0` (the
 * baseline) for the buyer with 20,000 orders, sequential requests (BENCH_REQUESTS each, shallow
 * and deep alternating so drift hits both alike) on the production server; the floor server
 * in the same run for context; and EXPLAIN (ANALYZE, BUFFERS) of the app's list statement at both offsets.
 */
requireProductionBuild();
const requests = Number(process.env.BENCH_REQUESTS ?? 200);
const warmup = Number(process.env.BENCH_WARMUP_REQUESTS ?? 20);
const explainRuns = Number(process.env.BENCH_EXPLAIN_RUNS ?? 7);
const DEEP_OFFSET = Number(process.env.BENCH_DEEP_OFFSET ?? 10_000);
const LIMIT = 50;

const databaseUrl = benchDatabaseUrl();
await ensureSeeded(databaseUrl, log);
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const deepBuyer = (await seededBuyers(pool)).deep;
const keys = await createBenchKeys(pool, [deepBuyer]);
const authorization = `Bearer ${keys.get(deepBuyer)}`;
const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-deep-offset-"));

type Page = { data: { id: string }[]; next_offset: number | null };

async function timedGet(url: string, headers: Record<string, string>): Promise<{ ms: number; page: Page }> {
  const started = performance.now();
  const response = await fetch(url, { headers });
  const page = (await response.json()) as Page;
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${JSON.stringify(page)}`);
  return { ms, page };
}

/** Latency of shallow and deep pages, alternating, after a warm-up of both. */
async function latencies(pageUrl: (offset: number) => string, headers: Record<string, string>) {
  for (let i = 0; i < warmup; i++) {
    await timedGet(pageUrl(0), headers);
    await timedGet(pageUrl(DEEP_OFFSET), headers);
  }
  const shallow: number[] = [];
  const deep: number[] = [];
  for (let i = 0; i < requests; i++) {
    shallow.push((await timedGet(pageUrl(0), headers)).ms);
    deep.push((await timedGet(pageUrl(DEEP_OFFSET), headers)).ms);
  }
  const stats = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return {
      median_ms: round(percentile(sorted, 50), 2),
      p99_ms: round(percentile(sorted, 99), 2),
      mean_ms: round(values.reduce((a, b) => a + b, 0) / values.length, 2),
    };
  };
  const s = stats(shallow);
  const d = stats(deep);
  return {
    shallow: s,
    deep: d,
    deep_to_shallow: { median: ratio(d.median_ms, s.median_ms), p99: ratio(d.p99_ms, s.p99_ms) },
    deep_minus_shallow_median_ms: round(d.median_ms - s.median_ms, 2),
  };
}

type Explained = { planning_ms: number; execution_ms: number; shared_hit: number; shared_read: number; plan: string };

/**
 * EXPLAIN (ANALYZE, BUFFERS) a few times after one warming run; median planning and execution
 * times, buffers and plan of the last run.
 */
async function explain(sql: string, params: unknown[]): Promise<Explained> {
  const client = await pool.connect();
  try {
    const runs: { planning: number; execution: number; hit: number; read: number }[] = [];
    for (let i = 0; i < explainRuns + 1; i++) {
      const { rows } = await client.query<{ "QUERY PLAN": unknown }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`,
        params,
      );
      const [root] = rows[0]!["QUERY PLAN"] as {
        Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number };
        "Planning Time": number;
        "Execution Time": number;
      }[];
      if (i === 0) continue; // the first run warms the cache
      runs.push({
        planning: root!["Planning Time"],
        execution: root!["Execution Time"],
        hit: root!.Plan["Shared Hit Blocks"],
        read: root!.Plan["Shared Read Blocks"],
      });
    }
    const text = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    return {
      planning_ms: round(median(runs.map((run) => run.planning)), 3),
      execution_ms: round(median(runs.map((run) => run.execution)), 3),
      shared_hit: runs.at(-1)!.hit,
      shared_read: runs.at(-1)!.read,
      plan: text.rows.map((row) => row["QUERY PLAN"]).join("\n"),
    };
  } finally {
    client.release();
  }
}

async function explainPage(offset: number) {
  const { text, values } = orderPageStatement(deepBuyer, LIMIT, offset);
  return { orders_query: await explain(text, values) };
}

const servers: Server[] = [];
try {
  const app = await startAppServer({ databaseUrl, storageDir, env: { RATE_LIMIT_EXEMPT_BUYERS: deepBuyer } });
  servers.push(app);
  const floor = await startFloorServer({ DATABASE_URL: databaseUrl });
  servers.push(floor);

  // Correctness: the deep page is a full page and is the right slice of the buyer's orders.
  const appUrl = (offset: number) => `${app.url}/api/v1/orders?limit=${LIMIT}&offset=${offset}`;
  const floorUrl = (offset: number) => `${floor.url}/orders?buyer=${deepBuyer}&limit=${LIMIT}&offset=${offset}`;
  const expected = await pool.query<{ id: string }>(
    `SELECT id FROM orders WHERE buyer_id = $1 ORDER BY paid_at DESC, id DESC LIMIT $2 OFFSET $3`,
    [deepBuyer, LIMIT, DEEP_OFFSET],
  );
  const { page } = await timedGet(appUrl(DEEP_OFFSET), { authorization });
  const ids = page.data.map((order) => order.id);
  if (ids.length !== LIMIT || ids.join() !== expected.rows.map((row) => row.id).join()) {
    throw new Error(`offset ${DEEP_OFFSET}: the app's page is not rows ${DEEP_OFFSET}..${DEEP_OFFSET + LIMIT - 1}`);
  }
  if (page.next_offset !== DEEP_OFFSET + LIMIT) throw new Error(`unexpected next_offset ${page.next_offset}`);
  log(`verified: offset ${DEEP_OFFSET} returns orders ${DEEP_OFFSET}..${DEEP_OFFSET + LIMIT - 1} of ${DEEP_ORDERS}`);

  log(`app: ${requests} sequential requests at offset 0 and at offset ${DEEP_OFFSET}, alternating`);
  const appLatency = await latencies(appUrl, { authorization });
  log(`floor: the same`);
  const floorLatency = await latencies(floorUrl, {});
  log(`EXPLAIN (ANALYZE, BUFFERS), ${explainRuns} runs each`);
  const shallowPlan = await explainPage(0);
  const deepPlan = await explainPage(DEEP_OFFSET);

  const sqlRatio = ratio(deepPlan.orders_query.execution_ms, shallowPlan.orders_query.execution_ms, 1);
  const appRatio = appLatency.deep_to_shallow.median;
  await report(
    "deep-offset",
    {
      buyer_orders: DEEP_ORDERS,
      limit: LIMIT,
      deep_offset: DEEP_OFFSET,
      requests_each: requests,
      warmup_requests_each: warmup,
      app: appLatency,
      floor: floorLatency,
      target: "app deep/shallow median within 3x",
      target_met: appRatio <= 3,
      explain: {
        runs: explainRuns,
        offset_0: shallowPlan,
        [`offset_${DEEP_OFFSET}`]: deepPlan,
        ratios_deep_to_shallow: {
          orders_query_execution: sqlRatio,
          orders_query_planning: ratio(deepPlan.orders_query.planning_ms, shallowPlan.orders_query.planning_ms),
          orders_query_buffers: ratio(
            deepPlan.orders_query.shared_hit + deepPlan.orders_query.shared_read,
            shallowPlan.orders_query.shared_hit + shallowPlan.orders_query.shared_read,
            1,
          ),
        },
      },
    },
    `deep-offset: app median ${appLatency.shallow.median_ms} ms at offset 0 vs ${appLatency.deep.median_ms} ms at ` +
      `offset ${DEEP_OFFSET} = ${appRatio}x (p99 ${appLatency.deep_to_shallow.p99}x; target <= 3x: ` +
      `${appRatio <= 3 ? "met" : "NOT met"}); list statement execution ${shallowPlan.orders_query.execution_ms} vs ` +
      `${deepPlan.orders_query.execution_ms} ms = ${sqlRatio}x; floor ${floorLatency.deep_to_shallow.median}x`,
  );
} finally {
  for (const server of servers.reverse()) await server.stop();
  await deleteBenchKeys(pool, keys.values());
  await pool.end();
  await fs.rm(storageDir, { recursive: true, force: true });
}
