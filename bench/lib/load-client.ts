import autocannon from "autocannon";

/**
 * The load generator, run as a process of its own so that its CPU is not the server's:
 * `node --import tsx bench/lib/load-client.ts` with LOAD_CONFIG (JSON) in the environment.
 * Connection i sends requests[i % requests.length] for the whole run (its own path and headers,
 * e.g. its own API key). A warm-up run comes first and is discarded. Prints one JSON object.
 */
type Config = {
  url: string;
  requests: { path: string; headers?: Record<string, string> }[];
  connections: number;
  seconds: number;
  warmupSeconds: number;
};

const config = JSON.parse(process.env.LOAD_CONFIG ?? "") as Config;

function load(seconds: number) {
  let next = 0;
  return autocannon({
    url: config.url,
    connections: config.connections,
    duration: seconds,
    setupClient: (client) => {
      const request = config.requests[next++ % config.requests.length]!;
      client.setRequests([{ method: "GET", path: request.path, headers: request.headers ?? {} }]);
    },
  });
}

if (config.warmupSeconds > 0) await load(config.warmupSeconds);
// Tells the parent the measured run starts now (it samples the server's CPU around it).
console.log(JSON.stringify({ phase: "measuring" }));
const cpuBefore = process.cpuUsage();
const result = await load(config.seconds);
const cpu = process.cpuUsage(cpuBefore);
console.log(
  JSON.stringify({
    requests_total: result.requests.total,
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
    errors: result.errors,
    timeouts: result.timeouts,
    bytes_per_s: result.throughput.average,
    client_cpu_s: (cpu.user + cpu.system) / 1e6,
  }),
);
