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
  report,
  requireProductionBuild,
  round,
  sampler,
  startAppServer,
  treeRssKb,
} from "./lib/common";

/**
 * Issue 42's load: BENCH_MCP_AGENTS agents (default 50, one account each) calling MCP tools at once
 * for BENCH_MCP_SECONDS (default 60) on two instances (agent i on instance i % 2; with REDIS_URL set
 * they share the rate limit), each as fast as answers come: describe_table, query, list_orders in
 * turn. What it reports: answers by status (anything but 200 and the rate limit's 429 is an error,
 * and so is a tool result with isError), and each instance's RSS (its process tree: the server and
 * its engine children) over the run, first and last tenth compared.
 */
requireProductionBuild();
const AGENTS = Number(process.env.BENCH_MCP_AGENTS ?? 50);
const SECONDS = Number(process.env.BENCH_MCP_SECONDS ?? 60);

const { databaseUrl, workDir } = await benchWorkspace("mcp-agents");
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const csv = ["id,category,price", ...Array.from({ length: 5000 }, (_, id) => `${id},c${id % 20},${id % 100}`)].join(
  "\n",
);

const stops: (() => Promise<void>)[] = [];
try {
  const agents: { key: string; orderId: string }[] = [];
  const buyers = [];
  for (let index = 0; index < AGENTS; index++) {
    const buyer = await createBuyer(`bench-mcp-agent-${index}@example.com`);
    const order = await createOrder({ buyerId: buyer.id, name: `agent ${index}`, status: "delivered" });
    await publishTable({
      orderId: order.id,
      table: "products",
      key: ["id"],
      parts: [{ name: "products.csv", source: { stream: Readable.from([csv]) } }],
    });
    buyers.push(buyer.id);
    agents.push({ key: "", orderId: order.id });
  }
  await processPendingNow();
  await closeEnginePool();
  const keys = await createBenchKeys(pool, buyers);
  buyers.forEach((id, index) => (agents[index]!.key = keys.get(id)!));
  const shared: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {};
  const servers = await Promise.all(
    [0, 1].map(() =>
      startAppServer({
        databaseUrl,
        storageDir: process.env.STORAGE_DIR!,
        env: { JOBS_WORKER: "off", ...shared },
      }),
    ),
  );
  stops.push(...servers.map((server) => server.stop));
  const memory = servers.map((server) => sampler(() => treeRssKb(server.pid), 1000));

  const statuses = new Map<string, number>();
  const count = (label: string) => statuses.set(label, (statuses.get(label) ?? 0) + 1);
  const deadline = Date.now() + SECONDS * 1000;
  const calls = (orderId: string) => [
    { name: "describe_table", arguments: { order_id: orderId, table: "products" } },
    { name: "query", arguments: { order_id: orderId, sql: "SELECT category, sum(price) FROM products GROUP BY 1" } },
    { name: "list_orders", arguments: {} },
  ];
  log(`${AGENTS} agents on 2 instances for ${SECONDS} s${process.env.REDIS_URL ? " (shared Redis limit)" : ""}`);
  await Promise.all(
    agents.map(async (agent, index) => {
      const url = `${servers[index % 2]!.url}/api/mcp`;
      for (let turn = 0; Date.now() < deadline; turn++) {
        const params = calls(agent.orderId)[turn % 3];
        const response = await fetch(url, {
          method: "POST",
          headers: {
            Authorization: `Bearer ${agent.key}`,
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: turn, method: "tools/call", params }),
        }).catch(() => undefined);
        if (!response) {
          count("network error");
          continue;
        }
        const body = await response.text();
        if (response.status === 429) {
          count("429");
          // An agent waits as told, as the SDK's users would.
          await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get("retry-after") ?? 1) * 1000));
        } else if (response.status === 200 && body.includes('"isError":true')) count("tool error");
        else count(String(response.status));
      }
    }),
  );
  const rss = memory.map((one) => one.stop());
  const tenth = (samples: number[], last: boolean) => {
    const size = Math.max(1, Math.floor(samples.length / 10));
    const part = last ? samples.slice(-size) : samples.slice(0, size);
    return part.reduce((sum, value) => sum + value, 0) / part.length / 1024;
  };
  const answers = Object.fromEntries(statuses);
  const errors = [...statuses].filter(([label]) => label !== "200" && label !== "429").reduce((n, [, c]) => n + c, 0);
  const instances = rss.map((samples) => ({
    rss_first_tenth_mb: round(tenth(samples, false), 0),
    rss_last_tenth_mb: round(tenth(samples, true), 0),
    rss_max_mb: round(Math.max(...samples) / 1024, 0),
  }));
  await report(
    "mcp-agents",
    { agents: AGENTS, seconds: SECONDS, shared_limit: Boolean(process.env.REDIS_URL), answers, errors, instances },
    `${AGENTS} agents for ${SECONDS} s on 2 instances: ${errors} errors besides 429; RSS ${instances.map((i) => `${i.rss_first_tenth_mb}->${i.rss_last_tenth_mb} MB`).join(", ")}`,
  );
} finally {
  await Promise.all(stops.map((stop) => stop()));
  await pool.end();
  await closeJobQueue();
  await disconnectDb();
  await fs.rm(workDir, { recursive: true, force: true });
}
