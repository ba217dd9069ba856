import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { migrate } from "../lib/db/migrate";
import { addOrderFile, createOrder } from "../lib/operator/orders";
import {
  benchDatabaseUrl,
  commandLine,
  createBenchKeys,
  deleteBenchKeys,
  descendants,
  ensureDatabaseExists,
  log,
  median,
  ratio,
  report,
  requireProductionBuild,
  round,
  rssKb,
  sampler,
  sleep,
  startAppServer,
  startFloorServer,
  treeCpuSeconds,
  type Server,
} from "./lib/common";
import { curl, mibPerSecond, requireCurl, type Curl } from "./lib/curl";

/**
 * Download of a large file (BENCH_DOWNLOAD_MB, default 1024) through the API: GET
 * /api/v1/orders/{id}/files/{fileId} with the key, follow the 302 to the signed link, body to
 * /dev/null, by curl in its own process. Baseline in the same run (the floor): a bare node:http
 * server streaming the same stored file with fs.createReadStream and a 1 MiB buffer (goal: the app
 * at >= 0.9x); the same with the default 64 KiB buffer is reported as a reference. Runs alternate
 * app/floor/reference (BENCH_DOWNLOAD_RUNS each). The server's memory: VmRSS of the Next.js server processes (the
 * launcher's descendants) every 50 ms, idle before against peak during; must stay under +100 MB.
 */
requireProductionBuild();
requireCurl("download.ts");
const fileMb = Number(process.env.BENCH_DOWNLOAD_MB ?? 1024);
const runs = Number(process.env.BENCH_DOWNLOAD_RUNS ?? 3);
const RSS_BUDGET_MB = 100;
const BUYER_EMAIL = "bench-download@example.com";
const ORDER_NAME = "Bench download";

const databaseUrl = benchDatabaseUrl();
await ensureDatabaseExists(databaseUrl);
await migrate(databaseUrl);
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-download-"));
const storageDir = path.join(workDir, "storage");
// lib/ reads these on first use: the file goes where the server will look for it.
process.env.DATABASE_URL = databaseUrl;
process.env.STORAGE_DIR = storageDir;

const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
const servers: Server[] = [];
let keys = new Map<string, string>();
let orderId: string | undefined;

/** The whole body through curl into sha256sum (both separate processes). */
function curlSha256(url: string, headers: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const args = ["-sS", "-L", "--fail"];
    for (const header of headers) args.push("-H", header);
    const download = spawn("curl", [...args, url], { stdio: ["ignore", "pipe", "inherit"] });
    const hash = spawn("sha256sum", [], { stdio: [download.stdout, "pipe", "inherit"] });
    let out = "";
    hash.stdout.on("data", (chunk) => (out += chunk));
    download.once("exit", (code) => code !== 0 && reject(new Error(`curl exited ${code}`)));
    hash.once("exit", () => resolve(out.split(" ")[0] ?? ""));
  });
}

const mib = (kb: number) => kb / 1024;

try {
  log(`writing a ${fileMb} MiB file of random bytes`);
  const source = path.join(workDir, "large.bin");
  await pipeline(
    (async function* () {
      for (let i = 0; i < fileMb; i++) yield randomBytes(1024 * 1024);
    })(),
    createWriteStream(source),
  );

  // Leftovers of an interrupted run (their bytes lived in a temp dir that is gone).
  await pool.query(`DELETE FROM orders WHERE name = $1`, [ORDER_NAME]);
  const buyer = await createBuyer(BUYER_EMAIL);
  const order = await createOrder({ buyerId: buyer.id, name: ORDER_NAME, status: "delivered" });
  orderId = order.id;
  log("loading it with addOrderFile()");
  const file = await addOrderFile({ orderId, source: createReadStream(source), name: "large.bin" });
  await disconnectDb();
  await fs.rm(source); // one copy on disk is enough: the stored one, which both servers serve
  const { rows } = await pool.query<{ storage_key: string }>(`SELECT storage_key FROM order_files WHERE id = $1`, [
    file.id,
  ]);
  const storedPath = path.join(storageDir, rows[0]!.storage_key);
  keys = await createBenchKeys(pool, [buyer.id]);
  const authorization = `Authorization: Bearer ${keys.get(buyer.id)}`;

  const app = await startAppServer({ databaseUrl, storageDir, env: { RATE_LIMIT_EXEMPT_BUYERS: buyer.id } });
  servers.push(app);
  const floor = await startFloorServer({ DATABASE_URL: databaseUrl, FLOOR_FILE: storedPath });
  servers.push(floor);

  // The Next.js server: everything the launcher (scripts/serve.ts) started.
  const serverPids = () => descendants(app.pid);
  const appRssKb = () => serverPids().reduce((sum, pid) => sum + rssKb(pid), 0);
  const processes = serverPids().map((pid) => ({ pid, command: commandLine(pid).slice(0, 120) }));
  const apiUrl = `${app.url}/api/v1/orders/${orderId}/files/${file.id}`;

  // Warm-up: load every code path of a download (API redirect, signed link, HEAD, a small range).
  const redirect = await fetch(apiUrl, {
    headers: { authorization: authorization.split(": ")[1]! },
    redirect: "manual",
  });
  const location = redirect.headers.get("location");
  if (redirect.status !== 302 || !location) throw new Error(`expected a 302 with Location, got ${redirect.status}`);
  const head = await fetch(location, { method: "HEAD" });
  if (Number(head.headers.get("content-length")) !== file.size) throw new Error("HEAD: wrong Content-Length");
  await (await fetch(location, { headers: { range: "bytes=0-1048575" } })).arrayBuffer();
  await sleep(1000);
  const idle = sampler(appRssKb, 50);
  await sleep(1000);
  const idleKb = median(idle.stop());
  const floorIdleKb = rssKb(floor.pid);

  log(`${runs} downloads each, alternating app and floor`);
  const appSamples = sampler(appRssKb, 50);
  const floorSamples = sampler(() => rssKb(floor.pid), 50);
  const appRuns: Curl[] = [];
  const floorRuns: Curl[] = [];
  const defaultBufferRuns: Curl[] = [];
  let appCpu = 0;
  let floorCpu = 0;
  for (let i = 0; i < runs; i++) {
    let cpu = treeCpuSeconds(app.pid);
    appRuns.push(await curl(apiUrl, [authorization]));
    appCpu += treeCpuSeconds(app.pid) - cpu;
    cpu = treeCpuSeconds(floor.pid);
    floorRuns.push(await curl(`${floor.url}/file`));
    floorCpu += treeCpuSeconds(floor.pid) - cpu;
    defaultBufferRuns.push(await curl(`${floor.url}/file-64k`));
  }
  log("verifying the app's bytes: curl | sha256sum");
  const sha256 = await curlSha256(apiUrl, [authorization]);
  const appPeakKb = Math.max(...appSamples.stop());
  const floorPeakKb = Math.max(...floorSamples.stop());

  for (const run of appRuns) {
    if (run.status !== 200 || run.redirects !== 1 || run.bytes !== file.size) {
      throw new Error(`app download: ${JSON.stringify(run)} (expected 200 after 1 redirect, ${file.size} bytes)`);
    }
  }
  for (const run of [...floorRuns, ...defaultBufferRuns]) {
    if (run.status !== 200 || run.bytes !== file.size) throw new Error(`floor download: ${JSON.stringify(run)}`);
  }
  if (sha256 !== file.sha256) throw new Error(`sha256 mismatch: got ${sha256}, stored ${file.sha256}`);

  const appSpeed = median(appRuns.map(mibPerSecond));
  const floorSpeed = median(floorRuns.map(mibPerSecond));
  const defaultBufferSpeed = median(defaultBufferRuns.map(mibPerSecond));
  const growthMb = mib(appPeakKb - idleKb);
  const throughputRatio = ratio(appSpeed, floorSpeed);
  const gib = (runs * file.size) / 1024 ** 3;
  await report(
    "download",
    {
      file_mib: round(file.size / 1024 / 1024, 1),
      runs_each: runs,
      client: "curl -L -o /dev/null (separate process)",
      sha256_verified: true,
      app: {
        mib_per_s_median: round(appSpeed, 1),
        mib_per_s_runs: appRuns.map((run) => round(mibPerSecond(run), 1)),
        server_cpu_s_per_gib: round(appCpu / gib, 2),
      },
      floor: {
        mib_per_s_median: round(floorSpeed, 1),
        mib_per_s_runs: floorRuns.map((run) => round(mibPerSecond(run), 1)),
        read_buffer: "1 MiB",
        server_cpu_s_per_gib: round(floorCpu / gib, 2),
      },
      floor_default_buffer: {
        read_buffer: "64 KiB (createReadStream's default)",
        mib_per_s_median: round(defaultBufferSpeed, 1),
        mib_per_s_runs: defaultBufferRuns.map((run) => round(mibPerSecond(run), 1)),
      },
      throughput_app_to_floor: throughputRatio,
      throughput_goal: 0.9,
      throughput_floor_to_default_buffer: ratio(floorSpeed, defaultBufferSpeed),
      server_cpu_per_gib_app_to_floor: ratio(appCpu, floorCpu),
      app_server_rss: {
        processes,
        idle_mb: round(mib(idleKb), 1),
        peak_mb: round(mib(appPeakKb), 1),
        peak_minus_idle_mb: round(growthMb, 1),
        peak_to_idle: ratio(appPeakKb, idleKb),
        budget_mb: RSS_BUDGET_MB,
        within_budget: growthMb < RSS_BUDGET_MB,
        launcher_rss_mb: round(mib(rssKb(app.pid)), 1),
      },
      floor_server_rss: {
        idle_mb: round(mib(floorIdleKb), 1),
        peak_mb: round(mib(floorPeakKb), 1),
        peak_minus_idle_mb: round(mib(floorPeakKb - floorIdleKb), 1),
      },
    },
    `download: app ${round(appSpeed, 0)} MiB/s vs floor (1 MiB buffer) ${round(floorSpeed, 0)} MiB/s = ${throughputRatio}x ` +
      `(goal >= 0.9x; 64 KiB buffer ${round(defaultBufferSpeed, 0)} MiB/s); ` +
      `server RSS idle ${round(mib(idleKb), 0)} MB, peak ${round(mib(appPeakKb), 0)} MB ` +
      `(+${round(growthMb, 1)} MB, budget +${RSS_BUDGET_MB}: ${growthMb < RSS_BUDGET_MB ? "met" : "NOT met"}); sha256 ok`,
  );
} finally {
  for (const server of servers.reverse()) await server.stop();
  if (orderId) await pool.query(`DELETE FROM orders WHERE id = $1`, [orderId]); // its file row goes with it
  await deleteBenchKeys(pool, keys.values());
  await pool.end();
  await disconnectDb();
  await fs.rm(workDir, { recursive: true, force: true });
}
