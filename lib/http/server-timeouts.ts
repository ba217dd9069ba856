import type { ServerOptions } from "node:http";
import { milliseconds } from "../db/timeouts";

/**
 * How long the app's HTTP server lets a client take to send its request, so a slow or idle
 * connection (slowloris) cannot hold a socket for long. Node's defaults would let one hold it
 * about 90 s (60 s for the headers, checked every 30 s). The API is GET only and the dashboard's
 * forms are small, so a request that takes longer than this is not a real client. A response
 * being sent (a large download) is not cut by these: only the socket's idle time applies to it.
 *
 * - HTTP_HEADERS_TIMEOUT_MS (default 10 s): the request line and headers.
 * - HTTP_REQUEST_TIMEOUT_MS (default 30 s): the whole request, body included.
 * - HTTP_KEEP_ALIVE_TIMEOUT_MS (default 5 s, Node's): an idle kept-alive connection between requests;
 *   behind a load balancer, set it above the balancer's idle timeout (e.g. 65 s for 60 s).
 * - HTTP_IDLE_TIMEOUT_MS (default 60 s): a socket on which nothing moves either way, e.g. a client
 *   that stopped reading a download.
 * Deadlines are checked every second, so each holds to within about a second.
 */
export type HttpTimeouts = {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
  idleMs: number;
};

type Env = Record<string, string | undefined>;

export function httpTimeouts(env: Env = process.env): HttpTimeouts {
  return {
    headersMs: milliseconds(env, "HTTP_HEADERS_TIMEOUT_MS", 10_000),
    requestMs: milliseconds(env, "HTTP_REQUEST_TIMEOUT_MS", 30_000),
    keepAliveMs: milliseconds(env, "HTTP_KEEP_ALIVE_TIMEOUT_MS", 5_000),
    idleMs: milliseconds(env, "HTTP_IDLE_TIMEOUT_MS", 60_000),
  };
}

/** node:http server options for these deadlines (the idle one is `server.timeout`, set after creation). */
export function httpServerOptions({ headersMs, requestMs, keepAliveMs }: HttpTimeouts): ServerOptions {
  return {
    // Node requires headersTimeout <= requestTimeout (0 turns the request deadline off).
    headersTimeout: requestMs > 0 ? Math.min(headersMs, requestMs) : headersMs,
    requestTimeout: requestMs,
    keepAliveTimeout: keepAliveMs,
    connectionsCheckingInterval: 1000,
  };
}
