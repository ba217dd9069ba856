import { readFileSync } from "node:fs";
import autocannon from "autocannon";

/**
 * The load generator, run as a process of its own so that its CPU is not the server's:
 * `node --import tsx bench/lib/load-client.ts` with LOAD_CONFIG (JSON) in the environment.
 * Connection i sends requests[i % requests.length] for the whole run (its own path and headers,
 * e.g. its own API key); with `cycle`, the requests are dealt out in equal slices, one per
 * connection, and each connection cycles through its slice (10,000 accounts' keys over 50
 * connections: 200 each). `requestsFile` holds the requests instead of `requests` (10,000 keys
 * exceed the OS's limit for an environment variable). A warm-up run comes first and is discarded.
 * With `untilStopped`, the measured part lasts until the process gets SIGUSR2.
 * Prints one JSON object.
 */
type Request = { path: string; headers?: Record<string, string> };
type Config = {
  url: string;
  requests?: Request[];
  requestsFile?: string;
  cycle?: boolean;
  /** Requests in all, instead of a duration (no warm-up). */
  amount?: number;
  /** Run until SIGUSR2 instead of `seconds` (the measured part: while something else runs). */
  untilStopped?: boolean;
  connections: number;
  seconds: number;
  warmupSeconds: number;
};

const config = JSON.parse(process.env.LOAD_CONFIG ?? "") as Config;
const requests: Request[] = config.requestsFile
  ? (JSON.parse(readFileSync(config.requestsFile, "utf8")) as Request[])
  : (config.requests ?? []);
const slice = Math.max(1, Math.floor(requests.length / config.connections));

function requestsOf(connection: number): Request[] {
  if (!config.cycle) return [requests[connection % requests.length]!];
  const start = (connection * slice) % requests.length;
  return requests.slice(start, start + slice);
}

function load(seconds: number) {
  let next = 0;
  return autocannon({
    url: config.url,
    connections: config.connections,
    ...(config.amount ? { amount: config.amount } : { duration: seconds }),
    setupClient: (client) => {
      const own = requestsOf(next++);
      client.setRequests(own.map((request) => ({ method: "GET", path: request.path, headers: request.headers ?? {} })));
    },
  });
}

const warmup = config.warmupSeconds > 0 && !config.amount ? await load(config.warmupSeconds) : undefined;
// Tells the parent the measured run starts now (it samples the server's CPU around it).
console.log(JSON.stringify({ phase: "measuring" }));
const cpuBefore = process.cpuUsage();
const measured = load(config.untilStopped ? 86_400 : config.seconds);
// The promise autocannon returns is also its instance (typed as a plain promise), which stop() ends early.
if (config.untilStopped) process.once("SIGUSR2", () => (measured as unknown as { stop: () => void }).stop());
const result = await measured;
const cpu = process.cpuUsage(cpuBefore);
console.log(
  JSON.stringify({
    requests_total: result.requests.total,
    warmup_requests: warmup?.requests.total ?? 0,
    duration_s: result.duration,
    requests_per_s: result.requests.total / result.duration,
    latency_ms: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: result.latency.mean,
    },
    status_2xx: result["2xx"],
    non_2xx: result.non2xx,
    status_4xx: result["4xx"],
    errors: result.errors,
    timeouts: result.timeouts,
    bytes_per_s: result.throughput.average,
    client_cpu_s: (cpu.user + cpu.system) / 1e6,
  }),
);
