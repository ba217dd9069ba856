import { spawn } from "node:child_process";
import path from "node:path";
import { machineBusySeconds, round, treeCpuSeconds, type Server } from "./common";

export type LoadRequest = { path: string; headers?: Record<string, string> };

/** What bench/lib/load-client.ts runs: see there. */
export type LoadConfig = {
  connections: number;
  seconds: number;
  warmupSeconds: number;
  /** Deal the requests out in slices, one per connection, each cycled through. */
  cycle?: boolean;
  /** The requests in a JSON file, for more than an environment variable holds. */
  requestsFile?: string;
  /** Requests in all, instead of `seconds` (no warm-up). */
  amount?: number;
};

export type LoadResult = {
  requests_total: number;
  /** Sent in the warm-up before the measured run (not in requests_total). */
  warmup_requests: number;
  duration_s: number;
  requests_per_s: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number; mean: number };
  status_2xx: number;
  status_4xx: number;
  non_2xx: number;
  errors: number;
  timeouts: number;
  bytes_per_s: number;
  client_cpu_s: number;
  server_cpu_s: number;
  machine_busy_cpu_s: number;
};

/** Runs bench/lib/load-client.ts in its own process; samples the server's CPU around the measured part. */
export function runLoad(server: Server, config: LoadConfig, requests: LoadRequest[] = []): Promise<LoadResult> {
  return startLoad(server, config, requests).result;
}

/**
 * The same load, started: `measuring` resolves when the warm-up is over and the measured part begins;
 * `stop()` ends a load started with `untilStopped` (the measured part then lasts exactly as long as
 * whatever ran beside it) and gives its result.
 */
export function startLoad(
  server: Server,
  config: LoadConfig & { untilStopped?: boolean },
  requests: LoadRequest[] = [],
): { measuring: Promise<void>; result: Promise<LoadResult>; stop: () => Promise<LoadResult> } {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("bench/lib/load-client.ts")], {
    env: { ...process.env, LOAD_CONFIG: JSON.stringify({ url: server.url, requests, ...config }) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let measuringStarted!: () => void;
  const measuring = new Promise<void>((resolve) => (measuringStarted = resolve));
  const result = new Promise<LoadResult>((resolve, reject) => {
    let buffered = "";
    let start: { server: number; machine: number } | undefined;
    let result: Omit<LoadResult, "server_cpu_s" | "machine_busy_cpu_s"> | undefined;
    let end: { server: number; machine: number } | undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk;
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (!line) continue;
        const message = JSON.parse(line) as { phase?: string };
        if (message.phase === "measuring") {
          start = { server: treeCpuSeconds(server.pid), machine: machineBusySeconds() };
          measuringStarted();
        } else {
          end = { server: treeCpuSeconds(server.pid), machine: machineBusySeconds() };
          result = message as typeof result;
        }
      }
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0 || !result || !start || !end) return reject(new Error(`load client failed (exit ${code})`));
      resolve({
        ...result,
        server_cpu_s: round(end.server - start.server),
        machine_busy_cpu_s: round(end.machine - start.machine),
      });
    });
  });
  const stop = async () => {
    await measuring;
    child.kill("SIGUSR2");
    return result;
  };
  return { measuring, result, stop };
}

/** A load result as the reports show it. */
export function describeLoad(load: LoadResult) {
  return {
    requests_per_s: round(load.requests_per_s, 1),
    latency_p50_ms: load.latency_ms.p50,
    latency_p99_ms: load.latency_ms.p99,
    latency_max_ms: load.latency_ms.max,
    requests_total: load.requests_total,
    status_2xx: load.status_2xx,
    non_2xx: load.non_2xx,
    errors: load.errors,
    timeouts: load.timeouts,
    response_bytes_per_s: Math.round(load.bytes_per_s),
    server_process_cpu_ms_per_request: round((load.server_cpu_s * 1000) / load.requests_total, 3),
    machine_busy_cpu_ms_per_request: round((load.machine_busy_cpu_s * 1000) / load.requests_total, 3),
    load_client_cpu_s: round(load.client_cpu_s),
  };
}
