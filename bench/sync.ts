import { spawn, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { addOrderFile, createOrder } from "../lib/orders/admin";
import {
  BENCH_AUTH_SECRET,
  createBenchKeys,
  freshBenchDatabase,
  log,
  ratio,
  report,
  requireProductionBuild,
  round,
  startAppServer,
} from "./lib/common";
import { requireCurl } from "./lib/curl";

/**
 * The clients' `sync` against curl fetching the same URLs (a database of its own,
 * `dataset_access_bench_sync`; the account is exempt from the rate limit, as a sync of 1,000 files
 * at 60/minute would measure the limit):
 * - 1,000 small files (1 KiB) of one order: `dataset-access sync` (TypeScript) and
 *   `python3 dataset_access.py sync`, each from an empty directory, against one curl process
 *   fetching the 1,000 API URLs with -L (connections reused; no checksum);
 * - one 1 GiB file: the same, curl with -L -o.
 * Wall time of each, and the clients' throughput as a ratio of curl's, all from one run.
 */
requireProductionBuild();
requireCurl("bench/sync.ts");
const SMALL_FILES = Number(process.env.BENCH_SMALL_FILES ?? 1000);
const BIG_BYTES = Number(process.env.BENCH_BIG_MIB ?? 1024) * 1024 * 1024;

const databaseUrl = await freshBenchDatabase("dataset_access_bench_sync");
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-sync-"));
process.env.DATABASE_URL = databaseUrl;
process.env.STORAGE_DIR = path.join(workDir, "storage");
process.env.AUTH_SECRET = BENCH_AUTH_SECRET;
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });

function timed(command: string, args: string[], env: Record<string, string> = {}): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve(Number(process.hrtime.bigint() - started) / 1e9)
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}`)),
    );
  });
}

let stopApp: (() => Promise<void>) | undefined;
try {
  log("building the TypeScript client");
  execFileSync(process.execPath, [path.resolve("node_modules/typescript/bin/tsc"), "-p", "clients/typescript"]);

  const small = await createBuyer("bench-sync-small@example.com");
  const big = await createBuyer("bench-sync-big@example.com");
  log(`loading ${SMALL_FILES} small files and one file of ${BIG_BYTES / 1024 / 1024} MiB`);
  const smallOrder = await createOrder({ buyerId: small.id, name: "small files", status: "delivered" });
  const smallIds: string[] = [];
  for (let i = 0; i < SMALL_FILES; i++) {
    const content = Buffer.from(createHash("sha256").update(String(i)).digest("hex").repeat(16)); // 1 KiB
    const added = await addOrderFile({
      orderId: smallOrder.id,
      name: `part-${String(i).padStart(5, "0")}.csv`,
      source: Readable.from([content]),
    });
    smallIds.push(added.id);
  }
  const bigOrder = await createOrder({ buyerId: big.id, name: "one big file", status: "delivered" });
  const chunk = Buffer.alloc(1024 * 1024, 7);
  const bigFile = await addOrderFile({
    orderId: bigOrder.id,
    name: "big.bin",
    source: Readable.from(
      (function* () {
        for (let sent = 0; sent < BIG_BYTES; sent += chunk.length) yield chunk;
      })(),
    ),
  });
  const keys = await createBenchKeys(pool, [small.id, big.id]);
  const app = await startAppServer({
    databaseUrl,
    storageDir: process.env.STORAGE_DIR!,
    env: { RATE_LIMIT_EXEMPT_BUYERS: `${small.id},${big.id}`, JOBS_WORKER: "off" },
  });
  stopApp = app.stop;
  const clientEnv = (buyer: string) => ({ DATASET_ACCESS_URL: app.url, DATASET_ACCESS_KEY: keys.get(buyer)! });
  const ts = (dir: string, buyer: string) =>
    timed(process.execPath, ["clients/typescript/dist/cli.js", "sync", "--dir", dir, "--json"], clientEnv(buyer));
  const py = (dir: string, buyer: string) =>
    timed("python3", ["clients/python/dataset_access.py", "sync", "--dir", dir, "--json"], clientEnv(buyer));
  const curlConfig = async (name: string, urls: [string, string][]) => {
    const file = path.join(workDir, `${name}.curlrc`);
    await fs.writeFile(file, urls.map(([url, out]) => `url = "${url}"\noutput = "${out}"\n`).join(""));
    return file;
  };
  const auth = (buyer: string) => `Authorization: Bearer ${keys.get(buyer)}`;

  log("1,000 small files");
  const smallCurlDir = path.join(workDir, "curl-small");
  await fs.mkdir(smallCurlDir);
  const smallConfig = await curlConfig(
    "small",
    smallIds.map((id, i) => [
      `${app.url}/api/v1/orders/${smallOrder.id}/files/${id}`,
      path.join(smallCurlDir, `${i}.csv`),
    ]),
  );
  const smallCurl = await timed("curl", ["-sS", "-L", "--fail", "-H", auth(small.id), "--config", smallConfig]);
  const smallTs = await ts(path.join(workDir, "ts-small"), small.id);
  const smallPy = await py(path.join(workDir, "py-small"), small.id);
  const smallRerun = await ts(path.join(workDir, "ts-small"), small.id);

  log("one 1 GiB file");
  const bigCurl = await timed("curl", [
    "-sS",
    "-L",
    "--fail",
    "-H",
    auth(big.id),
    "-o",
    path.join(workDir, "curl-big.bin"),
    `${app.url}/api/v1/orders/${bigOrder.id}/files/${bigFile.id}`,
  ]);
  await fs.rm(path.join(workDir, "curl-big.bin"));
  const bigTs = await ts(path.join(workDir, "ts-big"), big.id);
  await fs.rm(path.join(workDir, "ts-big"), { recursive: true });
  const bigPy = await py(path.join(workDir, "py-big"), big.id);
  await fs.rm(path.join(workDir, "py-big"), { recursive: true });

  const mibps = (seconds: number) => round(BIG_BYTES / 1024 / 1024 / seconds, 1);
  await report(
    "sync",
    {
      small_files: SMALL_FILES,
      small: {
        curl_s: round(smallCurl, 2),
        typescript_sync_s: round(smallTs, 2),
        python_sync_s: round(smallPy, 2),
        typescript_rerun_nothing_to_fetch_s: round(smallRerun, 2),
        typescript_to_curl: ratio(smallCurl, smallTs),
        python_to_curl: ratio(smallCurl, smallPy),
      },
      big_mib: BIG_BYTES / 1024 / 1024,
      big: {
        curl_s: round(bigCurl, 2),
        curl_mib_per_s: mibps(bigCurl),
        typescript_sync_s: round(bigTs, 2),
        typescript_mib_per_s: mibps(bigTs),
        python_sync_s: round(bigPy, 2),
        python_mib_per_s: mibps(bigPy),
        typescript_to_curl: ratio(bigCurl, bigTs),
        python_to_curl: ratio(bigCurl, bigPy),
      },
      note: "ratios are throughput against curl (curl's time / the client's); the clients also hash every byte and write a manifest, curl does neither",
    },
    `sync: ${SMALL_FILES} small files TS ${ratio(smallCurl, smallTs)}x / Python ${ratio(smallCurl, smallPy)}x of curl; ${BIG_BYTES / 1024 / 1024} MiB TS ${ratio(bigCurl, bigTs)}x / Python ${ratio(bigCurl, bigPy)}x of curl`,
  );
} finally {
  await stopApp?.();
  await disconnectDb();
  await pool.end();
  await fs.rm(workDir, { recursive: true, force: true });
}
