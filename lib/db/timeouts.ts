/**
 * How long the app waits for its database. Without deadlines a stalled database (a lock held by a
 * migration, a host dropping packets) hangs every request; with them a request fails in time and
 * is answered 503 service_unavailable with Retry-After (lib/http/problem.ts).
 *
 * - Connecting (and waiting for a free connection of the pool): DATABASE_CONNECT_TIMEOUT_MS, in
 *   every process.
 * - Each statement: DATABASE_STATEMENT_TIMEOUT_MS, in the app server only (see markRequestServer),
 *   as PostgreSQL's statement_timeout, which cancels the statement and keeps the connection; plus a
 *   client-side deadline a little later for a server that does not answer at all, which closes the
 *   connection. The operator CLI, migrations and imports have no statement deadline: a long
 *   `social:import` must not be cut at a request's length.
 *
 * Their errors are answered 503 by lib/http/unexpected-error.ts (isDatabaseUnavailable).
 */
import { processSingleton } from "../singleton";

type Env = Record<string, string | undefined>;

export type DatabaseTimeouts = {
  connectMs: number;
  /** 0: no statement deadline. */
  statementMs: number;
};

export const DATABASE_TIMEOUT_DEFAULTS: DatabaseTimeouts = { connectMs: 5000, statementMs: 5000 };

/** How much later than statement_timeout the client stops waiting for an answer that never comes. */
const CLIENT_DEADLINE_MARGIN_MS = 1000;

const thisProcess = () => processSingleton("db:process-role", () => ({ servesRequests: false }));

/**
 * Called by the app server (scripts/http-server.ts) before Next.js loads any route: from then on
 * the pool of this process gets the statement deadline (a processSingleton: Next.js bundles its
 * own copy of this module).
 */
export function markRequestServer(env: Env = process.env): void {
  databaseTimeouts(env, true); // refuses a malformed value at start rather than at the first request
  thisProcess().servesRequests = true;
}

export function databaseTimeouts(
  env: Env = process.env,
  servesRequests = thisProcess().servesRequests,
): DatabaseTimeouts {
  return {
    connectMs: milliseconds(env, "DATABASE_CONNECT_TIMEOUT_MS", DATABASE_TIMEOUT_DEFAULTS.connectMs),
    statementMs: servesRequests
      ? milliseconds(env, "DATABASE_STATEMENT_TIMEOUT_MS", DATABASE_TIMEOUT_DEFAULTS.statementMs)
      : 0,
  };
}

/** node-postgres pool settings for these deadlines. */
export function poolTimeoutOptions({ connectMs, statementMs }: DatabaseTimeouts) {
  return {
    connectionTimeoutMillis: connectMs,
    // Lets the operating system notice a peer that vanished while the connection was idle.
    keepAlive: true,
    ...(statementMs > 0
      ? { statement_timeout: statementMs, query_timeout: statementMs + CLIENT_DEADLINE_MARGIN_MS }
      : {}),
  };
}

/** The client stopped waiting for an answer: the connection may still carry the statement, so it must be closed, not reused. */
export function isQueryReadTimeout(error: unknown): boolean {
  // node-postgres's message for query_timeout (client.js).
  return error instanceof Error && error.message === "Query read timeout";
}

/** A setting in milliseconds from the environment: a whole number, else start-up fails with a clear message. */
export function milliseconds(env: Env, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  if (!/^\d+$/.test(value)) {
    throw new Error(`${name} must be a whole number of milliseconds (0 for none), got "${value}".`);
  }
  return Number(value);
}
