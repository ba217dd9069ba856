import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import path from "node:path";
import { benchDatabaseUrl, requireProductionBuild, RESULTS_DIR, round } from "./lib/common";

/**
 * `npm run bench`: every benchmark in sequence, each in its own process, then one markdown
 * table of the figures against their same-run baselines (for the README), also written to
 * bench/results/summary.md. A failing benchmark is reported and the others still run; the exit
 * code is then 1.
 */
requireProductionBuild();
const databaseUrl = benchDatabaseUrl();

type Outcome = { name: string; seconds: number; ok: boolean; result?: Record<string, unknown> };

function runScript(name: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve(`bench/${name}.ts`)], {
      env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk;
      process.stdout.write(chunk);
    });
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code: code ?? 1, stdout }));
  });
}

const outcomes: Outcome[] = [];
for (const name of [
  "seed-large",
  "api-list",
  "deep-offset",
  "download",
  "download-s3",
  "add-file-memory",
  "social-import",
]) {
  console.log(`\n## ${name}\n`);
  const resultFile = path.join(RESULTS_DIR, `${name}.json`);
  await fs.rm(resultFile, { force: true });
  const started = performance.now();
  // add-file-memory runs the operator CLI against DATABASE_URL: point it at the bench database too.
  const env = name === "add-file-memory" ? { ...process.env, DATABASE_URL: databaseUrl } : process.env;
  const { code, stdout } = await runScript(name, env);
  const seconds = round((performance.now() - started) / 1000, 1);
  let result: Record<string, unknown> | undefined;
  if (code === 0 && name === "add-file-memory") {
    // It prints its JSON only; keep it beside the others.
    result = JSON.parse(stdout) as Record<string, unknown>;
    await fs.mkdir(RESULTS_DIR, { recursive: true });
    await fs.writeFile(resultFile, JSON.stringify(result, null, 2) + "\n");
  } else if (code === 0) {
    result = JSON.parse(await fs.readFile(resultFile, "utf8")) as Record<string, unknown>;
  }
  outcomes.push({ name, seconds, ok: code === 0, result });
  if (code !== 0) console.error(`[bench] ${name} failed (exit ${code})`);
}

// ---------------------------------------------------------------------------------------------
// The summary table

type Row = [figure: string, measured: string, baseline: string, ratio: string];
const rows: Row[] = [];
const get = (name: string) => outcomes.find((outcome) => outcome.name === name)?.result as never;
const x = (value: number) => `${value}×`;

const seed = get("seed-large") as { skipped: boolean; seconds: number; orders: number } | undefined;
const list = get("api-list") as
  | {
      connections: number;
      seconds: number;
      app: { requests_per_s: number; latency_p99_ms: number };
      floor: { requests_per_s: number; latency_p99_ms: number };
      ratios: { throughput_app_to_floor: number; p99_app_to_floor: number };
    }
  | undefined;
if (list) {
  const load = `${list.connections} connections, ${list.seconds} s`;
  rows.push([
    `\`GET /api/v1/orders?limit=50\` throughput (${load}, 1.02 M orders)`,
    `${list.app.requests_per_s} req/s`,
    `${list.floor.requests_per_s} req/s (floor: node:http + pg, same SQL)`,
    `${x(list.ratios.throughput_app_to_floor)} (goal ≥ 0.5×)`,
  ]);
  rows.push([
    "same, p99 latency",
    `${list.app.latency_p99_ms} ms`,
    `${list.floor.latency_p99_ms} ms (floor)`,
    x(list.ratios.p99_app_to_floor),
  ]);
}
const deep = get("deep-offset") as
  | {
      deep_offset: number;
      app: {
        shallow: { median_ms: number; p99_ms: number };
        deep: { median_ms: number; p99_ms: number };
        deep_to_shallow: { median: number; p99: number };
      };
      explain: Record<string, { orders_query: { execution_ms: number } }> & {
        ratios_deep_to_shallow: { orders_query_execution: number };
      };
    }
  | undefined;
if (deep) {
  const deepKey = `offset_${deep.deep_offset}`;
  rows.push([
    `orders page at offset ${deep.deep_offset} (buyer with 20,000 orders), median latency`,
    `${deep.app.deep.median_ms} ms`,
    `${deep.app.shallow.median_ms} ms (offset 0)`,
    `${x(deep.app.deep_to_shallow.median)} (target ≤ 3×)`,
  ]);
  rows.push([
    "same, p99 latency",
    `${deep.app.deep.p99_ms} ms`,
    `${deep.app.shallow.p99_ms} ms (offset 0)`,
    x(deep.app.deep_to_shallow.p99),
  ]);
  rows.push([
    "same, orders query execution (EXPLAIN ANALYZE)",
    `${deep.explain[deepKey]!.orders_query.execution_ms} ms`,
    `${deep.explain.offset_0!.orders_query.execution_ms} ms (offset 0)`,
    x(deep.explain.ratios_deep_to_shallow.orders_query_execution),
  ]);
}
const accounts = get("api-accounts") as
  | {
      accounts: number;
      floor: { requests_per_s: number; latency_p99_ms: number; server_process_cpu_ms_per_request: number };
      in_process: { requests_per_s: number; latency_p99_ms: number; server_process_cpu_ms_per_request: number };
      redis?: { requests_per_s: number; server_process_cpu_ms_per_request: number };
      ratios: {
        in_process_throughput_to_floor: number;
        in_process_p99_to_floor: number;
        redis_throughput_to_floor?: number;
      };
      limiter_cost: { in_process_us_per_check: number; redis_us_per_check_sequential?: number };
      over_limit: { cpu_ms_per_200: number; cpu_ms_per_429: number; cpu_429_to_200: number };
      memory: {
        server_rss_idle_mb: number;
        server_rss_peak_under_load_mb: number;
        accounts_in_memory_run: number;
        growth_mb: number;
      };
      cold_start: { npm_start_to_first_api_answer_s: number; fresh_clone_npm_install_s: number | string };
    }
  | undefined;
if (accounts) {
  const load = `${accounts.accounts.toLocaleString("en")} accounts, rate limit on`;
  rows.push([
    `list throughput, ${load}, in-process limiter`,
    `${accounts.in_process.requests_per_s} req/s`,
    `${accounts.floor.requests_per_s} req/s (floor)`,
    `${x(accounts.ratios.in_process_throughput_to_floor)} (goal ≥ 0.75×)`,
  ]);
  rows.push([
    "same, p99 latency",
    `${accounts.in_process.latency_p99_ms} ms`,
    `${accounts.floor.latency_p99_ms} ms (floor)`,
    `${x(accounts.ratios.in_process_p99_to_floor)} (goal ≤ 1.5×)`,
  ]);
  if (accounts.redis && accounts.ratios.redis_throughput_to_floor !== undefined) {
    rows.push([
      `list throughput, ${load}, \`REDIS_URL\` limiter`,
      `${accounts.redis.requests_per_s} req/s`,
      `${accounts.floor.requests_per_s} req/s (floor)`,
      `${x(accounts.ratios.redis_throughput_to_floor)} (goal ≥ 0.65×)`,
    ]);
  }
  rows.push([
    "server CPU per request (in-process limiter)",
    `${accounts.in_process.server_process_cpu_ms_per_request} ms`,
    `${accounts.floor.server_process_cpu_ms_per_request} ms (floor)`,
    x(round(accounts.in_process.server_process_cpu_ms_per_request / accounts.floor.server_process_cpu_ms_per_request)),
  ]);
  rows.push([
    "limiter's own cost per check",
    `${accounts.limiter_cost.in_process_us_per_check} µs in process`,
    `${accounts.limiter_cost.redis_us_per_check_sequential ?? "-"} µs on Redis (sequential round trip)`,
    "",
  ]);
  rows.push([
    "server CPU per 429 (10% of load from accounts over their limit)",
    `${accounts.over_limit.cpu_ms_per_429} ms`,
    `${accounts.over_limit.cpu_ms_per_200} ms (per 200)`,
    x(accounts.over_limit.cpu_429_to_200),
  ]);
  rows.push([
    `server RSS after ${accounts.memory.accounts_in_memory_run.toLocaleString("en")} distinct accounts made one request`,
    `+${accounts.memory.growth_mb} MB`,
    `${accounts.memory.server_rss_idle_mb} MB idle, ${accounts.memory.server_rss_peak_under_load_mb} MB under load`,
    "",
  ]);
  rows.push([
    "cold start: `npm start` to the first API answer; fresh clone `npm install`",
    `${accounts.cold_start.npm_start_to_first_api_answer_s} s; ${accounts.cold_start.fresh_clone_npm_install_s} s`,
    "(tracked, no goal)",
    "",
  ]);
}
const usageCounting = get("usage-counting") as
  { on_requests_per_s_median: number; off_requests_per_s_median: number; throughput_on_to_off: number } | undefined;
if (usageCounting) {
  rows.push([
    "list throughput with usage counting on (1,000 accounts)",
    `${usageCounting.on_requests_per_s_median} req/s`,
    `${usageCounting.off_requests_per_s_median} req/s (API_USAGE_COUNTING=off)`,
    `${x(usageCounting.throughput_on_to_off)} (goal ≥ 0.95×)`,
  ]);
}
const download = get("download") as
  | {
      file_mib: number;
      app: { mib_per_s_median: number };
      floor: { mib_per_s_median: number };
      throughput_app_to_floor: number;
      app_server_rss: { idle_mb: number; peak_mb: number; peak_minus_idle_mb: number; peak_to_idle: number };
    }
  | undefined;
if (download) {
  rows.push([
    `download of a ${download.file_mib} MiB file (API → 302 → signed link), throughput`,
    `${download.app.mib_per_s_median} MiB/s`,
    `${download.floor.mib_per_s_median} MiB/s (node:http + fs.createReadStream, 1 MiB buffer)`,
    `${x(download.throughput_app_to_floor)} (goal ≥ 0.9×)`,
  ]);
  rows.push([
    "same, server RSS peak during download",
    `${download.app_server_rss.peak_mb} MB (+${download.app_server_rss.peak_minus_idle_mb} MB, budget +100 MB)`,
    `${download.app_server_rss.idle_mb} MB (idle, before)`,
    x(download.app_server_rss.peak_to_idle),
  ]);
}
const downloadS3 = get("download-s3") as
  | {
      file_mib: number;
      redirect: { median_ms: number; baseline_median_ms: number; median_to_baseline: number };
      download: { via_api_mib_per_s: number; presigned_direct_mib_per_s: number; via_api_to_direct: number };
      app_server: { cpu_s_per_gib_downloaded: number; rss_peak_minus_idle_mb: number };
    }
  | undefined;
if (downloadS3) {
  rows.push([
    "S3: the API's 302 to a presigned URL, median latency",
    `${downloadS3.redirect.median_ms} ms`,
    `${downloadS3.redirect.baseline_median_ms} ms (\`GET /api/v1/orders/{id}\`)`,
    x(downloadS3.redirect.median_to_baseline),
  ]);
  rows.push([
    `S3: download of a ${downloadS3.file_mib} MiB file through the API (302 → store)`,
    `${downloadS3.download.via_api_mib_per_s} MiB/s (app: ${downloadS3.app_server.cpu_s_per_gib_downloaded} CPU s/GiB, RSS +${downloadS3.app_server.rss_peak_minus_idle_mb} MB)`,
    `${downloadS3.download.presigned_direct_mib_per_s} MiB/s (the presigned URL directly)`,
    x(downloadS3.download.via_api_to_direct),
  ]);
}
const addFile = get("add-file-memory") as
  | {
      file_mb: number;
      add_file_peak_rss_mb: number;
      cli_baseline_peak_rss_mb: number;
      add_file_peak_rss_ratio_to_baseline: number;
      add_file_mb_per_s: number;
      sha256sum_mb_per_s: number;
      add_file_throughput_ratio_to_sha256sum: number;
    }
  | undefined;
if (addFile) {
  rows.push([
    `peak RSS of \`order:add-file\`, ${addFile.file_mb} MiB file`,
    `${addFile.add_file_peak_rss_mb} MB`,
    `${addFile.cli_baseline_peak_rss_mb} MB (\`buyer:create\`, no file)`,
    x(addFile.add_file_peak_rss_ratio_to_baseline),
  ]);
  rows.push([
    "throughput of `order:add-file` (read + hash + write)",
    `${addFile.add_file_mb_per_s} MB/s`,
    `${addFile.sha256sum_mb_per_s} MB/s (\`sha256sum\`, read + hash)`,
    x(addFile.add_file_throughput_ratio_to_sha256sum),
  ]);
}
const socialImport = get("social-import") as
  | { profiles: number; bad_lines: number; cli_seconds: number; copy_seconds: number; time_ratio_cli_to_copy: number }
  | undefined;
if (socialImport) {
  rows.push([
    `\`social:import\` of ${socialImport.profiles.toLocaleString("en")} profiles (+${socialImport.bad_lines} bad lines), wall time`,
    `${socialImport.cli_seconds} s (goal < 60 s)`,
    `${socialImport.copy_seconds} s (\`psql \\copy\` of the same rows)`,
    x(socialImport.time_ratio_cli_to_copy),
  ]);
}

function table(header: string[], body: string[][]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `| ${widths.map((width) => "-".repeat(width)).join(" | ")} |`, ...body.map(line)].join("\n");
}

const figures = table(["figure", "measured", "baseline (same run)", "ratio"], rows);
const timings = table(
  ["script", "result", "wall time"],
  outcomes.map((outcome) => [
    `bench/${outcome.name}.ts`,
    !outcome.ok ? "FAILED" : outcome.name === "seed-large" && seed?.skipped ? "already seeded" : "ok",
    `${outcome.seconds} s`,
  ]),
);
const summary = `${figures}\n\n${timings}\n`;
await fs.mkdir(RESULTS_DIR, { recursive: true });
await fs.writeFile(path.join(RESULTS_DIR, "summary.md"), summary);
await fs.writeFile(
  path.join(RESULTS_DIR, "run-all.json"),
  JSON.stringify({ finished_at: new Date().toISOString(), outcomes }, null, 2) + "\n",
);
console.log(`\n## Summary (also in bench/results/summary.md)\n\n${summary}`);
if (seed && !seed.skipped) console.log(`Seeding ${seed.orders} orders took ${round(seed.seconds, 1)} s.`);
process.exit(outcomes.every((outcome) => outcome.ok) ? 0 : 1);
