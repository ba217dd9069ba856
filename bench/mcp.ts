import { promises as fs } from "node:fs";
import { Readable } from "node:stream";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/queue";
import { createOrder } from "../lib/operator/orders";
import { processPendingNow } from "../lib/tables/pipeline";
import { publishTable } from "../lib/tables/publish";
import {
  createBenchKeys,
  benchWorkspace,
  log,
  median,
  report,
  requireProductionBuild,
  round,
  startAppServer,
} from "./lib/common";
import { benchRounds, spread } from "./lib/interleaved";

/**
 * The MCP `query` tool against the same SQL through `GET /api/v1/orders/{id}/sql` in the same run
 * (issue 42: p50 within 1.3x). A table of BENCH_MCP_ROWS rows (default 200,000); each round sends
 * BENCH_MCP_CALLS (default 30) of each, alternating (API, MCP, API, ...), one at a time, and takes
 * each side's p50; the ratio is the median of the rounds' MCP p50 over API p50, with its spread.
 * An MCP call is one POST, as an initialized agent sends it (stateless: no session to set up).
 */
requireProductionBuild();
const ROWS = Number(process.env.BENCH_MCP_ROWS ?? 200_000);
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 30);
const SQL =
  "SELECT category, count(*) AS n, round(avg(price), 2) AS mean FROM products GROUP BY category ORDER BY category";

const { databaseUrl, workDir } = await benchWorkspace("mcp");
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });

function productsCsv(): string {
  const lines = ["id,category,price"];
  for (let id = 1; id <= ROWS; id++) lines.push(`${id},c${id % 50},${((id % 1000) / 10).toFixed(2)}`);
  return lines.join("\n") + "\n";
}

async function timed(send: () => Promise<Response>, check: (body: string) => void): Promise<number> {
  const started = process.hrtime.bigint();
  const response = await send();
  const body = await response.text();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${body.slice(0, 300)}`);
  check(body);
  return seconds;
}

let stopApp: (() => Promise<void>) | undefined;
try {
  const buyer = await createBuyer("bench-mcp@example.com");
  const order = await createOrder({ buyerId: buyer.id, name: "products", status: "delivered" });
  log(`publishing a table of ${ROWS} rows`);
  await publishTable({
    orderId: order.id,
    table: "products",
    key: ["id"],
    parts: [{ name: "products.csv", source: { stream: Readable.from([productsCsv()]) } }],
  });
  await processPendingNow();
  await closeEnginePool();
  const key = (await createBenchKeys(pool, [buyer.id])).get(buyer.id)!;
  const app = await startAppServer({
    databaseUrl,
    storageDir: process.env.STORAGE_DIR!,
    env: { RATE_LIMIT_EXEMPT_BUYERS: buyer.id, JOBS_WORKER: "off" },
  });
  stopApp = app.stop;
  const auth = { Authorization: `Bearer ${key}` };
  const api = () =>
    timed(
      () => fetch(`${app.url}/api/v1/orders/${order.id}/sql?q=${encodeURIComponent(SQL)}&limit=100`, { headers: auth }),
      (body) => {
        if ((JSON.parse(body) as { rows: unknown[] }).rows.length !== 50)
          throw new Error("the API answered another result");
      },
    );
  const call = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "query", arguments: { order_id: order.id, sql: SQL, limit: 100 } },
  });
  const mcp = () =>
    timed(
      () =>
        fetch(`${app.url}/api/mcp`, {
          method: "POST",
          headers: {
            ...auth,
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
          },
          body: call,
        }),
      (body) => {
        const result = (JSON.parse(body) as { result: { structuredContent?: { rows: unknown[] } } }).result;
        if (result.structuredContent?.rows.length !== 50) throw new Error(`the tool answered ${body.slice(0, 300)}`);
      },
    );
  // Warm both paths (the engine's processes, the SDK's modules) before measuring.
  for (let index = 0; index < 5; index++) await Promise.all([api(), mcp()]);

  const rounds = benchRounds();
  const runs: { api: number; mcp: number }[] = [];
  for (let index = 0; index < rounds; index++) {
    const times = { api: [] as number[], mcp: [] as number[] };
    for (let call = 0; call < CALLS; call++) {
      times.api.push(await api());
      times.mcp.push(await mcp());
    }
    const run = { api: median(times.api), mcp: median(times.mcp) };
    log(
      `round ${index + 1}: GET /sql p50 ${round(run.api * 1000, 1)} ms, MCP query p50 ${round(run.mcp * 1000, 1)} ms`,
    );
    runs.push(run);
  }
  const ratio = spread(runs.map((run) => run.mcp / run.api));
  await report(
    "mcp",
    {
      rounds,
      rows: ROWS,
      calls_per_round: CALLS,
      api_sql_p50_ms: round(median(runs.map((run) => run.api)) * 1000, 1),
      mcp_query_p50_ms: round(median(runs.map((run) => run.mcp)) * 1000, 1),
      mcp_to_api_p50: ratio,
    },
    `MCP query p50 ${ratio.median}x GET /sql's (${ratio.min}-${ratio.max}), GROUP BY over ${ROWS} rows`,
  );
} finally {
  await stopApp?.();
  await pool.end();
  await closeJobQueue();
  await disconnectDb();
  await fs.rm(workDir, { recursive: true, force: true });
}
