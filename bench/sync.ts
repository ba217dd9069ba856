import { spawn, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { addOrderFile, createOrder } from "../lib/operator/orders";
import {
  BENCH_AUTH_SECRET,
  createBenchKeys,
  freshBenchDatabase,
  log,
  median,
  report,
  requireProductionBuild,
  round,
  startAppServer,
} from "./lib/common";
import { requireCurl } from "./lib/curl";
import { benchRounds, formatSpread, spread } from "./lib/interleaved";

/**
 * The clients' `sync` against curl fetching the same URLs (a database of its own,
 * `dataset_access_bench_sync`; the account is exempt from the rate limit, as a sync of 1,000 files
 * at 60/minute would measure the limit):
 * - 1,000 small files (1 KiB) of one order: `dataset-access sync` (TypeScript; 4 files at once,
 *   its default, and `--concurrency 1`) and `python3 dataset_access.py sync`, each from an empty
 *   directory, against one curl process fetching the 1,000 API URLs with -L (connections reused;
 *   no checksum);
 * - one 1 GiB file: the same, against the floor of a verifying download, `curl | tee | sha256sum`.
 * BENCH_ROUNDS (at least 3) interleaved rounds; each ratio is the median of the rounds' with its spread.
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
  const ts = (dir: string, buyer: string, extra: string[] = []) =>
    timed(
      process.execPath,
      ["clients/typescript/dist/cli.js", "sync", "--dir", dir, "--json", ...extra],
      clientEnv(buyer),
    );
  const py = (dir: string, buyer: string) =>
    timed("python3", ["clients/python/dataset_access.py", "sync", "--dir", dir, "--json"], clientEnv(buyer));
  const curlConfig = async (name: string, urls: [string, string][]) => {
    const file = path.join(workDir, `${name}.curlrc`);
    await fs.writeFile(file, urls.map(([url, out]) => `url = "${url}"\noutput = "${out}"\n`).join(""));
    return file;
  };
  const auth = (buyer: string) => `Authorization: Bearer ${keys.get(buyer)}`;

  // Each round: the floor, then each client, on the same data (interleaved, so a slow minute of a
  // shared machine hits every side); each ratio is the median of the rounds' ratios, with its spread.
  const rounds = benchRounds();
  const smallCurlDir = path.join(workDir, "curl-small");
  await fs.mkdir(smallCurlDir);
  const smallConfig = await curlConfig(
    "small",
    smallIds.map((id, i) => [
      `${app.url}/api/v1/orders/${smallOrder.id}/files/${id}`,
      path.join(smallCurlDir, `${i}.csv`),
    ]),
  );
  const bigUrl = `${app.url}/api/v1/orders/${bigOrder.id}/files/${bigFile.id}`;
  const bigOut = path.join(workDir, "floor-big.bin");
  // The honest floor for a verifying client: curl writing the file and sha256sum hashing the same
  // bytes as they pass (three processes, so the socket, the disk and the hash overlap).
  const verifyingCurl = async (hasher: string) => {
    const seconds = await timed(
      "sh",
      ["-c", `curl -sS -L --fail -H "$AUTH" "$URL" | tee "$OUT" | ${hasher} > "$OUT.sum"`],
      {
        AUTH: auth(big.id),
        URL: bigUrl,
        OUT: bigOut,
      },
    );
    // sha256sum prints "<hex>  -", openssl "SHA2-256(stdin)= <hex>".
    const printed = (await fs.readFile(`${bigOut}.sum`, "utf8")).match(/[0-9a-f]{64}/)?.[0];
    if (printed !== bigFile.sha256) throw new Error(`${hasher} printed ${printed}, not the file's ${bigFile.sha256}`);
    await fs.rm(bigOut);
    return seconds;
  };
  const runs: {
    smallCurl: number;
    smallTs: number;
    smallTsOne: number;
    smallPy: number;
    bigCurl: number;
    bigFloor: number;
    bigOpenssl: number;
    bigTs: number;
    bigPy: number;
  }[] = [];
  let smallRerun = 0;
  for (let round = 0; round < rounds; round++) {
    log(`round ${round + 1} of ${rounds}: ${SMALL_FILES} small files`);
    const smallCurl = await timed("curl", ["-sS", "-L", "--fail", "-H", auth(small.id), "--config", smallConfig]);
    const smallTs = await ts(path.join(workDir, `ts-small-${round}`), small.id);
    // The same client one file at a time, as it was before `--concurrency` (default 4).
    const smallTsOne = await ts(path.join(workDir, `ts-one-small-${round}`), small.id, ["--concurrency", "1"]);
    const smallPy = await py(path.join(workDir, `py-small-${round}`), small.id);
    if (round === 0) smallRerun = await ts(path.join(workDir, "ts-small-0"), small.id);
    log(`round ${round + 1} of ${rounds}: one ${BIG_BYTES / 1024 / 1024} MiB file`);
    const bigFloor = await verifyingCurl("sha256sum");
    const bigOpenssl = await verifyingCurl("openssl dgst -sha256");
    const bigCurl = await timed("curl", ["-sS", "-L", "--fail", "-H", auth(big.id), "-o", bigOut, bigUrl]);
    await fs.rm(bigOut);
    const bigTs = await ts(path.join(workDir, "ts-big"), big.id);
    await fs.rm(path.join(workDir, "ts-big"), { recursive: true });
    const bigPy = await py(path.join(workDir, "py-big"), big.id);
    await fs.rm(path.join(workDir, "py-big"), { recursive: true });
    runs.push({ smallCurl, smallTs, smallTsOne, smallPy, bigCurl, bigFloor, bigOpenssl, bigTs, bigPy });
  }

  const mibps = (seconds: number) => round(BIG_BYTES / 1024 / 1024 / seconds, 1);
  type Run = (typeof runs)[number];
  const medianOf = (pick: (run: Run) => number) => round(median(runs.map(pick)), 2);
  /** Both clients' throughput against one baseline, round by round: the baseline's time / the client's. */
  const clientsAgainst = (baseline: keyof Run, ts: keyof Run = "bigTs", py: keyof Run = "bigPy") => ({
    typescript: spread(runs.map((run) => run[baseline] / run[ts])),
    python: spread(runs.map((run) => run[baseline] / run[py])),
  });
  const smallToCurl = clientsAgainst("smallCurl", "smallTs", "smallPy");
  const smallOneToCurl = spread(runs.map((run) => run.smallCurl / run.smallTsOne));
  const bigToFloor = clientsAgainst("bigFloor");
  const bigToOpenssl = clientsAgainst("bigOpenssl");
  const bigToCurl = clientsAgainst("bigCurl");
  await report(
    "sync",
    {
      rounds,
      small_files: SMALL_FILES,
      small: {
        curl_s: medianOf((run) => run.smallCurl),
        typescript_sync_s: medianOf((run) => run.smallTs),
        python_sync_s: medianOf((run) => run.smallPy),
        typescript_rerun_nothing_to_fetch_s: round(smallRerun, 2),
        typescript_to_curl: smallToCurl.typescript,
        typescript_one_at_a_time_s: medianOf((run) => run.smallTsOne),
        typescript_one_at_a_time_to_curl: smallOneToCurl,
        python_to_curl: smallToCurl.python,
      },
      big_mib: BIG_BYTES / 1024 / 1024,
      big: {
        floor: "curl -L URL | tee FILE | sha256sum (writes and hashes every byte, as the clients do)",
        floor_s: medianOf((run) => run.bigFloor),
        floor_mib_per_s: mibps(median(runs.map((run) => run.bigFloor))),
        typescript_sync_s: medianOf((run) => run.bigTs),
        typescript_mib_per_s: mibps(median(runs.map((run) => run.bigTs))),
        python_sync_s: medianOf((run) => run.bigPy),
        python_mib_per_s: mibps(median(runs.map((run) => run.bigPy))),
        typescript_to_floor: bigToFloor.typescript,
        python_to_floor: bigToFloor.python,
        openssl_floor:
          "curl -L URL | tee FILE | openssl dgst -sha256 (the same with a hash that uses the CPU's SHA instructions, as the clients' do)",
        openssl_floor_s: medianOf((run) => run.bigOpenssl),
        typescript_to_openssl_floor: bigToOpenssl.typescript,
        python_to_openssl_floor: bigToOpenssl.python,
        curl_alone_s: medianOf((run) => run.bigCurl),
        curl_alone_mib_per_s: mibps(median(runs.map((run) => run.bigCurl))),
        typescript_to_curl_alone: bigToCurl.typescript,
        python_to_curl_alone: bigToCurl.python,
      },
      goals: {
        typescript_small: { goal: ">= 0.9 of curl", met: smallToCurl.typescript.median >= 0.9 },
        typescript_big: { goal: ">= 0.9 of the floor", met: bigToFloor.typescript.median >= 0.9 },
        python_big: { goal: ">= 0.8 of the floor", met: bigToFloor.python.median >= 0.8 },
      },
      note: "ratios are throughput (the floor's time / the client's), median of the rounds with min-max; small files against plain curl (no checksum), the big file against curl | tee | sha256sum",
    },
    `sync, ${rounds} interleaved rounds: ${SMALL_FILES} small files TS ${formatSpread(smallToCurl.typescript)} / Python ${formatSpread(smallToCurl.python)} of curl; ` +
      `${BIG_BYTES / 1024 / 1024} MiB TS ${formatSpread(bigToFloor.typescript)} / Python ${formatSpread(bigToFloor.python)} of curl | tee | sha256sum`,
  );
} finally {
  await stopApp?.();
  await disconnectDb();
  await pool.end();
  await fs.rm(workDir, { recursive: true, force: true });
}
