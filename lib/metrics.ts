import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { processSingleton } from "./singleton";

/**
 * Prometheus metrics of this process (prom-client), served at /api/metrics behind METRICS_TOKEN
 * by scripts/http-server.ts. One registry per process (Next.js bundles each route on its own).
 */
type Metrics = {
  registry: Registry;
  requestDuration: Histogram<"route" | "method" | "status">;
  rateLimitDecisions: Counter<"policy" | "outcome">;
  rateLimitFallbacks: Counter<"store">;
  downloadRedirects: Counter<"driver">;
  poolConnections: Gauge<"state">;
  exportRunAttempts: Counter<"outcome">;
  tablePublications: Counter<"outcome">;
  engineQueries: Counter<"door" | "outcome">;
  engineQueriesNow: Gauge<"state">;
  subsetsRefused: Counter;
  subsetsEvicted: Counter;
};

type PoolStats = { total: number; idle: number; waiting: number };
type QueryStats = { running: number; waiting: number };
export type EngineQueryOutcome = "admitted" | "refused" | "cancelled" | "truncated_rows" | "truncated_bytes";

function metrics(): Metrics {
  return processSingleton("metrics", () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const poolStats = processSingleton<{ read?: () => PoolStats }>("metrics:pool-stats", () => ({}));
    const queryStats = processSingleton<{ read?: () => QueryStats }>("metrics:query-stats", () => ({}));
    return {
      registry,
      exportRunAttempts: new Counter({
        name: "export_run_attempts_total",
        help: "Export run attempts made by this process, by outcome (completed, retry, waiting, failed, skipped).",
        labelNames: ["outcome"],
        registers: [registry],
      }),
      tablePublications: new Counter({
        name: "table_publications_total",
        help: "Table publications this process finished, by outcome (ready, held, failed).",
        labelNames: ["outcome"],
        registers: [registry],
      }),
      engineQueries: new Counter({
        name: "engine_queries_total",
        help: "Buyers' queries in the data engine, by door (rows, sql, subset, query_page, mcp) and outcome (admitted, refused as too_many_queries, cancelled as the client left, truncated_rows, truncated_bytes).",
        labelNames: ["door", "outcome"],
        registers: [registry],
      }),
      engineQueriesNow: new Gauge({
        name: "engine_queries",
        help: "Buyers' queries in this instance's data engine now: running in a process, and waiting.",
        labelNames: ["state"],
        registers: [registry],
        collect() {
          const stats = queryStats.read?.();
          if (!stats) return;
          this.set({ state: "running" }, stats.running);
          this.set({ state: "waiting" }, stats.waiting);
        },
      }),
      subsetsRefused: new Counter({
        name: "table_subsets_refused_total",
        help: "Subset requests refused with 429 too_many_queries: the account had its most subsets queued or being made.",
        registers: [registry],
      }),
      subsetsEvicted: new Counter({
        name: "table_subsets_evicted_total",
        help: "Ready subsets removed (object and row) to fit a new one in its account's quota, least recently used first.",
        registers: [registry],
      }),
      requestDuration: new Histogram({
        name: "http_request_duration_seconds",
        help: "Time to answer an HTTP request, by route pattern, method and status.",
        labelNames: ["route", "method", "status"],
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers: [registry],
      }),
      rateLimitDecisions: new Counter({
        name: "ratelimit_decisions_total",
        help: "Rate-limit checks by policy and outcome (allowed or refused).",
        labelNames: ["policy", "outcome"],
        registers: [registry],
      }),
      rateLimitFallbacks: new Counter({
        name: "ratelimit_store_fallbacks_total",
        help: "Rate-limit checks answered in process because the shared store failed or was too slow.",
        labelNames: ["store"],
        registers: [registry],
      }),
      downloadRedirects: new Counter({
        name: "download_redirects_total",
        help: "Download links handed out, by storage driver (local signed link or S3 presigned URL).",
        labelNames: ["driver"],
        registers: [registry],
      }),
      poolConnections: new Gauge({
        name: "db_pool_connections",
        help: "Database pool connections: total, idle, and requests waiting for one.",
        labelNames: ["state"],
        registers: [registry],
        collect() {
          const stats = poolStats.read?.();
          if (!stats) return;
          this.set({ state: "total" }, stats.total);
          this.set({ state: "idle" }, stats.idle);
          this.set({ state: "waiting" }, stats.waiting);
        },
      }),
    };
  });
}

export function countTablePublication(outcome: "ready" | "held" | "failed"): void {
  metrics().tablePublications.inc({ outcome });
}

export function countSubsetRefused(): void {
  metrics().subsetsRefused.inc();
}

export function countSubsetsEvicted(count: number): void {
  metrics().subsetsEvicted.inc(count);
}

export function observeRequest(route: string, method: string, status: number, seconds: number): void {
  metrics().requestDuration.observe({ route, method, status: String(status) }, seconds);
}

export function countRateLimitDecision(policy: string, allowed: boolean): void {
  metrics().rateLimitDecisions.inc({ policy, outcome: allowed ? "allowed" : "refused" });
}

export function countRateLimitFallback(store: string): void {
  metrics().rateLimitFallbacks.inc({ store });
}

export function countDownloadRedirect(driver: string): void {
  metrics().downloadRedirects.inc({ driver });
}

export function countExportRun(outcome: string): void {
  metrics().exportRunAttempts.inc({ outcome });
}

/** The database pool tells the metrics how to read its state (at scrape time). */
export function reportPoolStats(read: () => PoolStats): void {
  processSingleton<{ read?: () => PoolStats }>("metrics:pool-stats", () => ({})).read = read;
}

export function countEngineQuery(door: string, outcome: EngineQueryOutcome): void {
  metrics().engineQueries.inc({ door, outcome });
}

/** The query pool tells the metrics how to read its state (at scrape time). */
export function reportEngineQueries(read: () => QueryStats): void {
  processSingleton<{ read?: () => QueryStats }>("metrics:query-stats", () => ({})).read = read;
}

export async function metricsExposition(): Promise<{ contentType: string; body: string }> {
  const { registry } = metrics();
  return { contentType: registry.contentType, body: await registry.metrics() };
}
