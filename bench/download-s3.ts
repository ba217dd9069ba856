import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { startTestS3, type TestS3 } from "../tests/helpers/s3";
import { createBuyer } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { migrate } from "../lib/db/migrate";
import { addOrderFile, createOrder } from "../lib/operator/orders";
import { contentDisposition } from "../lib/downloads/http";
import { presignedGetUrl } from "../lib/storage/s3";
import {
  benchDatabaseUrl,
  createBenchKeys,
  deleteBenchKeys,
  descendants,
  ensureDatabaseExists,
  log,
  median,
  percentile,
  ratio,
  report,
  requireProductionBuild,
  round,
  rssKb,
  sampler,
  sleep,
  startAppServer,
  treeCpuSeconds,
  type Server,
} from "./lib/common";
import { curl, mibPerSecond, requireCurl, type Curl } from "./lib/curl";

/**
 * Downloads with STORAGE_DRIVER=s3, against the tests' S3-compatible store on loopback
 * (@20minutes/s3rver, a process of its own). Two figures, each against a baseline of the same run:
 * - the cost of the redirect: latency of the API's 302 to a presigned URL against `GET
 *   /api/v1/orders/{id}` (the same key check, rate limit and order query, with a JSON body instead
 *   of a signature), BENCH_S3_REDIRECTS sequential requests each;
 * - a whole download of a BENCH_S3_MB file (default 256) by curl through the API (302, then the
 *   store) against curl fetching a presigned URL of the same object directly; and the app server's
 *   CPU and memory meanwhile, which should not move: no byte passes through it.
 * s3rver is not a production store (it serves from its own Node process and disk), so the absolute
 * speed says little; the ratio says what the app adds to a download.
 */
requireProductionBuild();
requireCurl("download-s3.ts");
const fileMb = Number(process.env.BENCH_S3_MB ?? 256);
const runs = Number(process.env.BENCH_DOWNLOAD_RUNS ?? 3);
const redirects = Number(process.env.BENCH_S3_REDIRECTS ?? 300);
const BUYER_EMAIL = "bench-download-s3@example.com";
const ORDER_NAME = "Bench download (S3)";

const databaseUrl = benchDatabaseUrl();
await ensureDatabaseExists(databaseUrl);
await migrate(databaseUrl);
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-download-s3-"));
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
let s3: TestS3 | undefined;
let app: Server | undefined;
let keys = new Map<string, string>();
let orderId: string | undefined;

/** Sequential requests, each timed from send to the end of its body (fetch, in this process). */
async function latencies(url: string, authorization: string, expectStatus: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < redirects; i++) {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization }, redirect: "manual" });
    await response.arrayBuffer();
    times.push(performance.now() - started);
    if (response.status !== expectStatus) throw new Error(`${url}: ${response.status}, expected ${expectStatus}`);
  }
  return times.sort((a, b) => a - b);
}

try {
  s3 = await startTestS3();
  Object.assign(process.env, s3.env, { DATABASE_URL: databaseUrl, STORAGE_DIR: path.join(workDir, "unused") });

  log(`writing a ${fileMb} MiB file of random bytes and uploading it (multipart) with addOrderFile()`);
  const source = path.join(workDir, "large.bin");
  await pipeline(
    (async function* () {
      for (let i = 0; i < fileMb; i++) yield randomBytes(1024 * 1024);
    })(),
    createWriteStream(source),
  );
  await pool.query(`DELETE FROM orders WHERE name = $1`, [ORDER_NAME]);
  const buyer = await createBuyer(BUYER_EMAIL);
  const order = await createOrder({ buyerId: buyer.id, name: ORDER_NAME, status: "delivered" });
  orderId = order.id;
  const file = await addOrderFile({ orderId, source: createReadStream(source), name: "large.bin" });
  await fs.rm(source);
  const { rows } = await pool.query<{ storage_key: string }>(`SELECT storage_key FROM order_files WHERE id = $1`, [
    file.id,
  ]);
  const location = rows[0]!.storage_key;
  const direct = await presignedGetUrl(
    location,
    { contentDisposition: contentDisposition("large.bin"), contentType: "application/octet-stream" },
    300,
  );
  await disconnectDb();

  keys = await createBenchKeys(pool, [buyer.id]);
  const secret = keys.get(buyer.id)!;
  app = await startAppServer({
    databaseUrl,
    storageDir: path.join(workDir, "unused"),
    env: { ...s3.env, RATE_LIMIT_EXEMPT_BUYERS: buyer.id },
  });
  const appPids = () => descendants(app!.pid);
  const appRssKb = () => appPids().reduce((sum, pid) => sum + rssKb(pid), 0);
  const orderUrl = `${app.url}/api/v1/orders/${orderId}`;
  const downloadUrl = `${orderUrl}/files/${file.id}`;

  // Warm-up of both paths, then the redirect's cost against the order read, interleaved in halves.
  await latencies(downloadUrl, `Bearer ${secret}`, 302);
  await latencies(orderUrl, `Bearer ${secret}`, 200);
  log(`${redirects} redirects and ${redirects} order reads, sequential`);
  const redirectTimes = await latencies(downloadUrl, `Bearer ${secret}`, 302);
  const orderTimes = await latencies(orderUrl, `Bearer ${secret}`, 200);

  await sleep(500);
  const idle = sampler(appRssKb, 50);
  await sleep(1000);
  const idleKb = median(idle.stop());
  log(`${runs} downloads each, alternating through the API and straight from the presigned URL`);
  const samples = sampler(appRssKb, 50);
  const viaApi: Curl[] = [];
  const straight: Curl[] = [];
  let appCpu = 0;
  for (let i = 0; i < runs; i++) {
    const cpu = treeCpuSeconds(app.pid);
    viaApi.push(await curl(downloadUrl, [`Authorization: Bearer ${secret}`]));
    appCpu += treeCpuSeconds(app.pid) - cpu;
    straight.push(await curl(direct));
  }
  const peakKb = Math.max(...samples.stop());
  for (const run of [...viaApi, ...straight]) {
    if (run.status !== 200 || run.bytes !== file.size) throw new Error(`download: ${JSON.stringify(run)}`);
  }
  if (viaApi.some((run) => run.redirects !== 1)) throw new Error("expected exactly one redirect through the API");

  const apiSpeed = median(viaApi.map(mibPerSecond));
  const directSpeed = median(straight.map(mibPerSecond));
  const redirectMedian = median(redirectTimes);
  const orderMedian = median(orderTimes);
  const gib = (runs * file.size) / 1024 ** 3;
  await report(
    "download-s3",
    {
      store: "@20minutes/s3rver on loopback (a process of its own)",
      file_mib: fileMb,
      runs_each: runs,
      redirect: {
        requests: redirects,
        median_ms: round(redirectMedian, 2),
        p99_ms: round(percentile(redirectTimes, 99), 2),
        baseline: "GET /api/v1/orders/{id}, same key and order",
        baseline_median_ms: round(orderMedian, 2),
        baseline_p99_ms: round(percentile(orderTimes, 99), 2),
        median_to_baseline: ratio(redirectMedian, orderMedian),
      },
      download: {
        via_api_mib_per_s: round(apiSpeed, 1),
        via_api_runs: viaApi.map((run) => round(mibPerSecond(run), 1)),
        presigned_direct_mib_per_s: round(directSpeed, 1),
        presigned_direct_runs: straight.map((run) => round(mibPerSecond(run), 1)),
        via_api_to_direct: ratio(apiSpeed, directSpeed),
      },
      app_server: {
        cpu_s_per_gib_downloaded: round(appCpu / gib, 3),
        rss_idle_mb: round(idleKb / 1024, 1),
        rss_peak_mb: round(peakKb / 1024, 1),
        rss_peak_minus_idle_mb: round((peakKb - idleKb) / 1024, 1),
      },
    },
    `download-s3: redirect ${round(redirectMedian, 2)} ms median vs order read ${round(orderMedian, 2)} ms ` +
      `(${ratio(redirectMedian, orderMedian)}x); ${fileMb} MiB via the API ${round(apiSpeed, 0)} MiB/s vs presigned ` +
      `URL directly ${round(directSpeed, 0)} MiB/s (${ratio(apiSpeed, directSpeed)}x); app server ` +
      `${round(appCpu / gib, 3)} CPU s per GiB, RSS +${round((peakKb - idleKb) / 1024, 1)} MB`,
  );
} finally {
  await app?.stop();
  if (orderId) await pool.query(`DELETE FROM orders WHERE id = $1`, [orderId]);
  await deleteBenchKeys(pool, keys.values());
  await pool.end();
  await disconnectDb();
  await s3?.stop();
  await fs.rm(workDir, { recursive: true, force: true });
}
