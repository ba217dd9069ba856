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
  report,
  requireProductionBuild,
  round,
  startAppServer,
} from "./lib/common";
import { describeLoad, runLoad, type LoadResult } from "./lib/load";
import { benchRounds, formatSpread, spread } from "./lib/interleaved";
import { ensureSeeded, seededBuyers } from "./lib/seed";

/**
 * What counting API usage per key costs: `GET /api/v1/orders?limit=50` over the 1M-order data set,
 * 1,000 accounts with their own keys (rate limit on, each account under its limit), 50
 * connections, with usage counting on against API_USAGE_COUNTING=off, interleaved (off, on, ...;
 * BENCH_ROUNDS rounds, default 3; BENCH_SECONDS), the median of the rounds' ratios with its spread.
 * Goal: on >= 0.95x of off.
 */
requireProductionBuild();
const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const runs = benchRounds();
const connections = 50;
const accountCount = 1_000;

const databaseUrl = benchDatabaseUrl();
await ensureSeeded(databaseUrl, log);
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-usage-"));
let keys = new Map<string, string>();

try {
  const buyers = await (await seededBuyers(pool)).regular(accountCount);
  keys = await createBenchKeys(pool, buyers);
  const requestsFile = path.join(workDir, "requests.json");
  await fs.writeFile(
    requestsFile,
    JSON.stringify(
      buyers.map((buyer) => ({
        path: "/api/v1/orders?limit=50",
        headers: { authorization: `Bearer ${keys.get(buyer)}` },
      })),
    ),
  );
  const results: Record<"on" | "off", LoadResult[]> = { on: [], off: [] };
  for (let run = 0; run < runs; run++) {
    for (const mode of ["off", "on"] as const) {
      // Each account stays under 60 a minute: a fresh server per run, and the runs are short.
      const app = await startAppServer({
        databaseUrl,
        storageDir: path.join(workDir, "storage"),
        env: { API_USAGE_COUNTING: mode },
      });
      log(`usage counting ${mode}, run ${run + 1} of ${runs}`);
      results[mode].push(await runLoad(app, { connections, seconds, warmupSeconds: 2, cycle: true, requestsFile }));
      await app.stop();
    }
  }
  const throughputs = (loads: LoadResult[]) => loads.map((load) => load.requests_per_s);
  const on = median(throughputs(results.on));
  const off = median(throughputs(results.off));
  const throughput = spread(results.on.map((load, run) => load.requests_per_s / results.off[run]!.requests_per_s));
  // Warm-ups count too; every answer of the "on" servers is in the table once they stopped.
  const counted = await pool.query<{ count: string }>(
    `SELECT coalesce(sum(u.count), 0) AS count FROM api_key_usage u JOIN api_keys k ON k.id = u.key_id
     WHERE k.name LIKE 'bench-run-%' AND k.buyer_id = ANY($1)`,
    [buyers],
  );
  await report(
    "usage-counting",
    {
      request: "GET /api/v1/orders?limit=50",
      accounts: accountCount,
      connections,
      seconds,
      runs_each: runs,
      on: results.on.map(describeLoad),
      off: results.off.map(describeLoad),
      on_requests_per_s_median: round(on, 1),
      off_requests_per_s_median: round(off, 1),
      throughput_on_to_off: throughput,
      goal: ">= 0.95",
      goal_met: throughput.median >= 0.95,
      all_responses_2xx: [...results.on, ...results.off].every((load) => load.non_2xx + load.errors === 0),
      answers_counted_in_on_runs: Number(counted.rows[0]!.count),
      measured_requests_in_on_runs: results.on.reduce((sum, load) => sum + load.requests_total, 0),
    },
    `usage-counting, ${runs} interleaved rounds: on ${round(on, 0)} req/s vs off ${round(off, 0)} req/s (medians) = ${formatSpread(throughput)} (goal >= 0.95)`,
  );
} finally {
  await deleteBenchKeys(pool, keys.values());
  await pool.end();
  await fs.rm(workDir, { recursive: true, force: true });
}
