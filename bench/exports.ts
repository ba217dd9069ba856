import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { DeleteObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { createBuyer } from "../lib/buyers";
import { db, disconnectDb } from "../lib/db/client";
import { createDestination } from "../lib/exports/destinations";
import { closeJobQueue } from "../lib/queue";
import { addOrderFile, createOrder } from "../lib/operator/orders";
import { OPERATOR } from "../lib/security/log";
import { accountNameOf } from "../lib/exports/targets/azure";
import { AZURITE_KEY, startTestAzurite, startTestSftp } from "../tests/exports/stores";
import { startTestS3, TEST_BUCKET } from "../tests/helpers/s3";
import { BENCH_AUTH_SECRET, freshBenchDatabase, log, report } from "./lib/common";
import { benchRounds, formatSpread, interleaved, spread } from "./lib/interleaved";

/**
 * Export runs against each store's own SDK (`npm run bench:exports`), interleaved rounds, on the
 * test stores on loopback (s3rver, Azurite, the ssh2 SFTP server): one large file (BENCH_EXPORT_MB,
 * default 1024) and 1,000 files of 100 KiB (BENCH_SMALL_FILES). The subject is the operator's
 * `export:run --wait` (a process of its own, reading the files from local storage); its time is the
 * run's own (started_at to finished_at: every file checked, copied, verified, the manifest last).
 * The baseline is bench/exports-baseline.ts: the SDK's own upload of the same files (S3 `Upload`;
 * Azure `uploadFile`; ssh2 `fastPut`) or 8 at once (PutObject, Put Blob, fastPut), also a process
 * of its own. Memory: the export process's peak RSS less its peak on a run it only queues.
 */

const bigMb = Number(process.env.BENCH_EXPORT_MB ?? 1024);
const smallCount = Number(process.env.BENCH_SMALL_FILES ?? 1000);
const rounds = benchRounds();
/** BENCH_STORES (s3,azure,sftp) and BENCH_WORKLOADS (big,small) narrow a run, for quick checks while tuning. */
const onlyStores = (process.env.BENCH_STORES ?? "s3,azure,sftp").split(",");
const onlyWorkloads = (process.env.BENCH_WORKLOADS ?? "big,small").split(",");
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-exports-"));
const databaseUrl = await freshBenchDatabase("dataset_access_bench_exports");
const secretsKey = randomBytes(32).toString("base64");
Object.assign(process.env, {
  DATABASE_URL: databaseUrl,
  STORAGE_DRIVER: "local",
  STORAGE_DIR: path.join(workDir, "storage"),
  AUTH_SECRET: BENCH_AUTH_SECRET,
  EXPORT_SECRETS_KEY: secretsKey,
  EXPORT_ALLOW_PRIVATE: "true",
  LOG_LEVEL: "warn",
});

const s3 = await startTestS3({ buckets: [TEST_BUCKET, "bench-lake"] });
const azurite = await startTestAzurite();
await azurite.createContainer("bench");
const sftp = await startTestSftp();
await fs.mkdir(path.join(sftp.root, "bench"));

type Run = { seconds: number; peakRssMb: number; stdout: string };

/** Runs a command, sampling its peak RSS (VmHWM) from /proc while it lives. */
function measure(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ["--import", "tsx", ...args], { env, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    let peakKb = 0;
    child.stdout.on("data", (chunk) => (stdout += chunk));
    const timer = setInterval(async () => {
      const status = await fs.readFile(`/proc/${child.pid}/status`, "utf8").catch(() => "");
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    }, 20);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearInterval(timer);
      if (code !== 0) return reject(new Error(`${args.join(" ")} exited ${code}:\n${stdout}`));
      resolve({ seconds: (performance.now() - started) / 1000, peakRssMb: peakKb / 1024, stdout });
    });
  });
}

// The files, once: in local storage for the exports, on disk for the baselines.
log(`writing ${bigMb} MiB and ${smallCount} x 100 KiB`);
const bigPath = path.join(workDir, "big.bin");
await pipeline(
  (async function* () {
    for (let i = 0; i < bigMb; i++) yield randomBytes(1024 * 1024);
  })(),
  createWriteStream(bigPath),
);
const smallDir = path.join(workDir, "small");
await fs.mkdir(smallDir);
const smallPaths: string[] = [];
for (let i = 0; i < smallCount; i++) {
  const file = path.join(smallDir, `part-${String(i).padStart(5, "0")}.bin`);
  await fs.writeFile(file, randomBytes(100 * 1024));
  smallPaths.push(file);
}
const buyer = await createBuyer(`bench-exports-${Date.now()}@example.com`);
const bigOrder = await createOrder({ buyerId: buyer.id, name: "big", status: "delivered" });
await addOrderFile({ orderId: bigOrder.id, name: "big.bin", source: createReadStream(bigPath) });
const smallOrder = await createOrder({ buyerId: buyer.id, name: "small", status: "delivered" });
for (const file of smallPaths) {
  await addOrderFile({ orderId: smallOrder.id, name: path.basename(file), source: createReadStream(file) });
}

const stores = {
  s3: {
    bucket: "bench-lake",
    region: "us-east-1",
    endpoint: s3.endpoint,
    force_path_style: true,
    access_key_id: "S3RVER",
    secret_access_key: "S3RVER",
  },
  azure: { account_url: azurite.accountUrl, container: "bench", account_key: AZURITE_KEY },
  sftp: {
    host: sftp.host,
    port: sftp.port,
    username: sftp.username,
    password: sftp.password,
    directory: "/bench",
    host_key_sha256: sftp.fingerprint(),
  },
} as const;

let destinations = 0;
/** A destination of `type` under a prefix of its own, so nothing of an earlier round is found there and skipped. */
async function freshDestination(type: keyof typeof stores) {
  const label = `r${++destinations}`;
  const fields: Record<string, unknown> = { ...stores[type] };
  if (type === "sftp") fields.directory = `/bench/${label}`;
  else fields.prefix = `${label}/`;
  return (await createDestination(buyer.id, { name: label, type, fields, template: "{file_name}" }, OPERATOR)).id;
}

/**
 * Removes what a measured run wrote under `prefix`, so that every run meets the store as the first did: Azurite
 * slows down as its blob index grows (a round of 1,000 blobs took 3.4 s, the third such round 5.7 s), which would
 * favour whichever side of a pair runs first.
 */
async function clearPrefix(type: keyof typeof stores, prefix: string): Promise<void> {
  const eight = async <T>(items: T[], work: (item: T) => Promise<unknown>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < items.length) await work(items[next++]!);
      }),
    );
  };
  if (type === "s3") {
    const keys = (await s3.objectKeys("bench-lake")).filter((key) => key.startsWith(`${prefix}/`));
    await eight(keys, (key) => s3Client.send(new DeleteObjectCommand({ Bucket: "bench-lake", Key: key })));
  } else if (type === "azure") {
    const names: string[] = [];
    for await (const blob of azureContainer.listBlobsFlat({ prefix: `${prefix}/` })) names.push(blob.name);
    await eight(names, (name) => azureContainer.deleteBlob(name));
  } else {
    await fs.rm(path.join(sftp.root, "bench", prefix), { recursive: true, force: true });
  }
}
const s3Client = new S3Client({
  region: "us-east-1",
  endpoint: s3.endpoint,
  forcePathStyle: true,
  credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
});
const azureContainer = new BlobServiceClient(
  azurite.accountUrl,
  new StorageSharedKeyCredential(accountNameOf(azurite.accountUrl), AZURITE_KEY),
).getContainerClient("bench");

async function exportRun(type: keyof typeof stores, orderId: string, wait = true) {
  const destination = await freshDestination(type);
  const run = await measure([
    "scripts/admin.ts",
    "export:run",
    "--order",
    orderId,
    "--destination",
    destination,
    ...(wait ? ["--wait"] : []),
    "--json",
  ]);
  const [view] = (JSON.parse(run.stdout) as { runs: { id: string; state: string; error: string | null }[] }).runs;
  if (wait && view!.state !== "completed") throw new Error(`the ${type} run did not complete: ${view!.error}`);
  const row = await db().exportRun.findUniqueOrThrow({ where: { id: view!.id } });
  const seconds = wait ? (row.finishedAt!.getTime() - row.startedAt!.getTime()) / 1000 : 0;
  // An account has at most 10 destinations: each round's goes once measured.
  await db().exportDestination.delete({ where: { id: destination } });
  await clearPrefix(type, `r${destinations}`);
  return { seconds, peakRssMb: run.peakRssMb };
}

async function baseline(type: keyof typeof stores, files: string[], round: number) {
  const config = path.join(workDir, `${type}.json`);
  await fs.writeFile(config, JSON.stringify(stores[type]));
  if (type === "sftp") await fs.mkdir(path.join(sftp.root, "bench", `b${round}-${files.length}`), { recursive: true });
  const run = await measure(["bench/exports-baseline.ts", type, config, `b${round}-${files.length}`, ...files]);
  await clearPrefix(type, `b${round}-${files.length}`);
  return { seconds: (JSON.parse(run.stdout) as { seconds: number }).seconds, peakRssMb: run.peakRssMb };
}

const results: Record<string, unknown> = {};
const lines: string[] = [];
for (const type of (Object.keys(stores) as (keyof typeof stores)[]).filter((each) => onlyStores.includes(each))) {
  const idle = await exportRun(type, smallOrder.id, false);
  for (const [, workload, orderId, files, bytes] of (
    [
      ["big", "one large file", bigOrder.id, [bigPath], bigMb * 1024 * 1024],
      ["small", `${smallCount} files of 100 KiB`, smallOrder.id, smallPaths, smallCount * 100 * 1024],
    ] as const
  ).filter(([name]) => onlyWorkloads.includes(name))) {
    log(`${type}: ${workload}, ${rounds} interleaved rounds`);
    const pairs = await interleaved(
      rounds,
      (round) => baseline(type, [...files], round),
      () => exportRun(type, orderId),
    );
    const throughput = spread(pairs.map(({ baseline, subject }) => baseline.seconds / subject.seconds));
    const extraRss = spread(
      pairs.map(({ subject }) => subject.peakRssMb - idle.peakRssMb),
      0,
    );
    results[`${type}: ${workload}`] = {
      ratio_of_sdk_throughput: throughput,
      export_mb_per_s: spread(
        pairs.map(({ subject }) => bytes / 1e6 / subject.seconds),
        1,
      ),
      sdk_mb_per_s: spread(
        pairs.map(({ baseline }) => bytes / 1e6 / baseline.seconds),
        1,
      ),
      export_peak_rss_over_idle_mb: extraRss,
      idle_peak_rss_mb: Math.round(idle.peakRssMb),
    };
    lines.push(
      `${type}, ${workload}: ${formatSpread(throughput)} of the SDK's throughput; export process +${extraRss.median} MB RSS (${extraRss.min}–${extraRss.max})`,
    );
  }
}

await report("exports", { big_file_mb: bigMb, small_files: smallCount, rounds, results }, lines.join("\n"));
await Promise.allSettled([s3.stop(), azurite.stop(), sftp.stop()]);
await closeJobQueue();
await disconnectDb();
await fs.rm(workDir, { recursive: true, force: true });
