import { isDeepStrictEqual } from "node:util";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import {
  benchDatabaseUrl,
  createBenchKeys,
  deleteBenchKeys,
  log,
  ratio,
  report,
  requireProductionBuild,
  round,
  startAppServer,
  startFloorServer,
  type Server,
} from "./lib/common";
import { describeLoad, runLoad } from "./lib/load";
import { ensureSeeded, seededBuyers } from "./lib/seed";

/**
 * Throughput and p99 latency of `GET /api/v1/orders?limit=50` on the production server over the
 * 1,020,000-order data set, against the floor (bench/floor-server.ts: the same SQL on node:http +
 * pg, no framework) in the same run, under the same load: 50 connections, each with the key of
 * one of 50 random buyers (BENCH_CONNECTIONS, BENCH_SECONDS, BENCH_WARMUP_SECONDS).
 */
requireProductionBuild();
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const buyerCount = Number(process.env.BENCH_BUYERS ?? 50);
const LIMIT = 50;

const databaseUrl = benchDatabaseUrl();
await ensureSeeded(databaseUrl, log);
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const buyers = await (await seededBuyers(pool)).regular(buyerCount);
const keys = await createBenchKeys(pool, buyers);
const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-api-list-"));
const load = { connections, seconds, warmupSeconds };

const servers: Server[] = [];
try {
  log(`starting the app server (rate limit lifted for ${buyers.length} benchmark buyers) and the floor server`);
  const app = await startAppServer({
    databaseUrl,
    storageDir,
    env: { RATE_LIMIT_EXEMPT_BUYERS: buyers.join(",") },
  });
  servers.push(app);
  const floor = await startFloorServer({ DATABASE_URL: databaseUrl });
  servers.push(floor);

  // Correctness first: for every buyer, the app's page is a full page and equals the floor's.
  for (const buyer of buyers) {
    const appResponse = await fetch(`${app.url}/api/v1/orders?limit=${LIMIT}`, {
      headers: { authorization: `Bearer ${keys.get(buyer)}` },
    });
    const appPage = (await appResponse.json()) as { data: { id: string }[]; next_offset: number | null };
    const floorPage = await (await fetch(`${floor.url}/orders?buyer=${buyer}&limit=${LIMIT}`)).json();
    if (appResponse.status !== 200 || appPage.data.length !== LIMIT || appPage.next_offset !== LIMIT) {
      throw new Error(
        `app answered ${appResponse.status} for buyer ${buyer}: ${JSON.stringify(appPage).slice(0, 300)}`,
      );
    }
    if (!isDeepStrictEqual(appPage, floorPage)) throw new Error(`app and floor pages differ for buyer ${buyer}`);
  }
  log(`verified: ${buyers.length} buyers, app and floor return the same ${LIMIT} orders (with files), field for field`);

  log(`app: ${connections} connections, ${warmupSeconds} s warm-up + ${seconds} s`);
  const appLoad = await runLoad(
    app,
    load,
    buyers.map((buyer) => ({
      path: `/api/v1/orders?limit=${LIMIT}`,
      headers: { authorization: `Bearer ${keys.get(buyer)}` },
    })),
  );
  log(`floor: ${connections} connections, ${warmupSeconds} s warm-up + ${seconds} s`);
  const floorLoad = await runLoad(
    floor,
    load,
    buyers.map((buyer) => ({ path: `/orders?buyer=${buyer}&limit=${LIMIT}` })),
  );

  const throughputRatio = ratio(appLoad.requests_per_s, floorLoad.requests_per_s);
  const p99Ratio = ratio(appLoad.latency_ms.p99, floorLoad.latency_ms.p99);
  const clean = [appLoad, floorLoad].every((load) => load.non_2xx + load.errors + load.timeouts === 0);
  await report(
    "api-list",
    {
      request: `GET /api/v1/orders?limit=${LIMIT}`,
      connections,
      buyers: buyers.length,
      seconds,
      warmup_seconds: warmupSeconds,
      cores: os.cpus().length,
      app: describeLoad(appLoad),
      floor: describeLoad(floorLoad),
      ratios: {
        throughput_app_to_floor: throughputRatio,
        p99_app_to_floor: p99Ratio,
        p50_app_to_floor: ratio(appLoad.latency_ms.p50, floorLoad.latency_ms.p50),
        machine_cpu_per_request_app_to_floor: ratio(
          appLoad.machine_busy_cpu_s / appLoad.requests_total,
          floorLoad.machine_busy_cpu_s / floorLoad.requests_total,
        ),
      },
      goal: "app throughput >= 0.5 x floor",
      goal_met: throughputRatio >= 0.5,
      all_responses_2xx: clean,
    },
    `api-list: app ${round(appLoad.requests_per_s, 0)} req/s p99 ${appLoad.latency_ms.p99} ms; ` +
      `floor ${round(floorLoad.requests_per_s, 0)} req/s p99 ${floorLoad.latency_ms.p99} ms; ` +
      `throughput ${throughputRatio}x floor (goal >= 0.5: ${throughputRatio >= 0.5 ? "met" : "NOT met"}), p99 ${p99Ratio}x` +
      (clean ? "" : " [some responses were not 2xx]"),
  );
} finally {
  for (const server of servers.reverse()) await server.stop();
  await deleteBenchKeys(pool, keys.values());
  await pool.end();
  await fs.rm(storageDir, { recursive: true, force: true });
}
