import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freshBenchDatabase, log, median, ratio, report, round } from "./lib/common";
import { formatSpread, interleaved, spread } from "./lib/interleaved";

/**
 * The operator CLI's start (issue #38): CPU-seconds (user + system) of `--help`, `key:revoke` of an unknown id
 * and `order:add-file` of a tiny file, run built (`npm run admin`: scripts/built.mjs) and from source under tsx
 * (`node --import tsx scripts/admin.ts`, how every call ran before), interleaved (tsx, built, tsx, ...). Figures:
 * the whole process (/usr/bin/time), and the part before the command's own work (CLI_START_CPU_FILE, written
 * by scripts/admin/run.ts; for --help the whole process is all start). Ratios are built / tsx per round.
 * BENCH_ROUNDS (default 5); a fresh database `dataset_access_bench_cli` on DATABASE_URL's server.
 */
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-cli-start-"));
const env = {
  ...process.env,
  DATABASE_URL: await freshBenchDatabase("dataset_access_bench_cli"),
  STORAGE_DIR: path.join(workDir, "storage"),
};
const launchers = {
  tsx: ["--import", "tsx", "scripts/admin.ts"],
  built: ["scripts/built.mjs", "admin"],
};
type Launcher = keyof typeof launchers;
type Sample = { whole: number; start: number };

/** One CLI call: its process's CPU-seconds, and those before its command's work (the whole, when it has none). */
async function measure(launcher: Launcher, args: string[]): Promise<Sample> {
  const times = path.join(workDir, "time");
  const start = path.join(workDir, "start");
  await fs.rm(start, { force: true });
  const argv = ["-f", "%U %S", "-o", times, process.execPath, ...launchers[launcher], ...args];
  await new Promise<void>((resolve, reject) =>
    execFile("/usr/bin/time", argv, { env: { ...env, CLI_START_CPU_FILE: start } }, (error, _stdout, stderr) =>
      // --help exits 0, key:revoke of an unknown id exits 1: both are what is measured.
      error && error.code !== 1 ? reject(new Error(`${args[0]}: ${stderr}`)) : resolve(),
    ),
  );
  const [user, system] = (await fs.readFile(times, "utf8")).trim().split("\n").pop()!.split(" ").map(Number);
  const whole = user! + system!;
  const before = await fs.readFile(start, "utf8").catch(() => undefined);
  return { whole, start: before === undefined ? whole : Number(before) };
}

const admin = async (...args: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [...launchers.built, ...args, "--json"], { env }, (error, stdout, stderr) =>
      error ? reject(new Error(stderr)) : resolve(stdout),
    ),
  );
await admin("buyer:create", "--email", "bench.cli@example.com"); // also builds the CLI if it is stale
const orderId = (
  JSON.parse(await admin("order:create", "--email", "bench.cli@example.com", "--name", "B")) as {
    id: string;
  }
).id;
let files = 0;
const tinyFile = async () => {
  const file = path.join(workDir, `tiny-${++files}.csv`);
  await fs.writeFile(file, `id,value\n1,${files}\n`);
  return file;
};
const commands: Record<string, () => Promise<string[]>> = {
  help: async () => ["--help"],
  "key:revoke": async () => ["key:revoke", "--id", "key_unknown"],
  "order:add-file": async () => ["order:add-file", "--order", orderId, "--path", await tinyFile()],
};
// One call of each first, so neither side pays a cold file cache (nor the built side V8's empty compile cache).
for (const launcher of ["tsx", "built"] as const)
  for (const args of Object.values(commands)) await measure(launcher, await args());

const results: Record<string, unknown> = {};
const lines: string[] = [];
for (const [name, args] of Object.entries(commands)) {
  log(`${name}: ${rounds} interleaved rounds`);
  const pairs = await interleaved(
    rounds,
    async () => measure("tsx", await args()),
    async () => measure("built", await args()),
  );
  const side = (launcher: "baseline" | "subject", figure: keyof Sample) =>
    round(median(pairs.map((pair) => pair[launcher][figure])), 3);
  const startRatio = spread(pairs.map((pair) => ratio(pair.subject.start, pair.baseline.start, 3)));
  const wholeRatio = spread(pairs.map((pair) => ratio(pair.subject.whole, pair.baseline.whole, 3)));
  results[name] = {
    start_cpu_s: { tsx: side("baseline", "start"), built: side("subject", "start") },
    whole_cpu_s: { tsx: side("baseline", "whole"), built: side("subject", "whole") },
    start_ratio: startRatio,
    whole_ratio: wholeRatio,
  };
  lines.push(
    `${name}: start ${side("subject", "start")} CPU-s built vs ${side("baseline", "start")} under tsx (${formatSpread(startRatio)}); ` +
      `whole process ${side("subject", "whole")} vs ${side("baseline", "whole")}`,
  );
}
await fs.rm(workDir, { recursive: true, force: true });
await report("cli-start", { rounds, results }, lines.join("\n"));
