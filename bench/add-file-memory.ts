import { spawn } from "node:child_process";
import { createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { randomBytes } from "node:crypto";

/**
 * Peak memory and speed of `order:add-file` on a large file (BENCH_FILE_MB, default 1024),
 * against baselines measured in the same run: the CLI's peak RSS on a command that moves no
 * file (buyer:create), and `sha256sum` reading and hashing the same file.
 * Uses DATABASE_URL, or the embedded PostgreSQL when it is unset.
 */
const fileMb = Number(process.env.BENCH_FILE_MB ?? 1024);
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-add-file-"));
const env = { ...process.env, STORAGE_DIR: path.join(workDir, "storage") };

type Run = { code: number; stdout: string; peakRssMb: number; seconds: number };

/** Runs a command, sampling its peak RSS (VmHWM, a high-water mark) from /proc while it lives. */
function measure(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    let peakKb = 0;
    child.stdout.on("data", (chunk) => (stdout += chunk));
    const sampler = setInterval(async () => {
      const status = await fs.readFile(`/proc/${child.pid}/status`, "utf8").catch(() => "");
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peakKb = Math.max(peakKb, kb);
    }, 20);
    child.on("exit", (code) => {
      clearInterval(sampler);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      resolve({ code: code ?? 1, stdout, peakRssMb: peakKb / 1024, seconds });
    });
  });
}

// One process (no tsx CLI wrapper), so /proc shows the process that does the work.
const admin = (...args: string[]) =>
  measure(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args, "--json"]);

const source = path.join(workDir, "large.bin");
await pipeline(
  (async function* () {
    for (let i = 0; i < fileMb; i++) yield randomBytes(1024 * 1024);
  })(),
  createWriteStream(source),
);

const email = `bench-${Date.now()}@example.com`;
const baseline = await admin("buyer:create", "--email", email);
const order = await admin("order:create", "--email", email, "--name", "Benchmark");
const orderId = JSON.parse(order.stdout).id as string;
const hashFloor = await measure("sha256sum", [source]);
const addFile = await admin("order:add-file", "--order", orderId, "--path", source);
if (addFile.code !== 0) throw new Error(`order:add-file failed: ${addFile.stdout}`);

const mbPerSecond = (run: Run) => fileMb / run.seconds;
console.log(
  JSON.stringify(
    {
      file_mb: fileMb,
      cli_baseline_peak_rss_mb: Math.round(baseline.peakRssMb),
      add_file_peak_rss_mb: Math.round(addFile.peakRssMb),
      add_file_peak_rss_ratio_to_baseline: +(addFile.peakRssMb / baseline.peakRssMb).toFixed(2),
      add_file_seconds: +addFile.seconds.toFixed(2),
      add_file_mb_per_s: Math.round(mbPerSecond(addFile)),
      sha256sum_mb_per_s: Math.round(mbPerSecond(hashFloor)),
      add_file_throughput_ratio_to_sha256sum: +(mbPerSecond(addFile) / mbPerSecond(hashFloor)).toFixed(2),
    },
    null,
    2,
  ),
);
await fs.rm(workDir, { recursive: true, force: true });
