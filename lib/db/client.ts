import { createHash } from "node:crypto";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { dropProcessSingleton, processSingleton } from "../singleton";
import { PrismaClient } from "./generated/client";
import { databaseTimeouts, isQueryReadTimeout, poolTimeoutOptions } from "./timeouts";
import { errorFields, logger } from "../log";
import { reportPoolStats } from "../metrics";

export { Prisma } from "./generated/client";
export type * from "./generated/client";

const POOL = "db:pool";
const PRISMA = "db:prisma";

/** The app's one connection pool, shared by Prisma and the hot-path statements (see `sqlQuery`). */
function pool(): pg.Pool {
  return processSingleton(POOL, () => {
    const created = new pg.Pool({
      connectionString: databaseUrl(),
      max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
      // Prisma's adapter writes timestamps without a zone, so sessions must run in UTC whatever the
      // server's or database's default; else a revocation could land hours in the future.
      options: "-c TimeZone=UTC",
      ...poolTimeoutOptions(databaseTimeouts()),
    });
    // A dropped idle connection must not crash the process; the next query opens a new one.
    created.on("error", (error) => logger().error(errorFields(error), `database pool: ${error.message}`));
    reportPoolStats(() => ({ total: created.totalCount, idle: created.idleCount, waiting: created.waitingCount }));
    return created;
  });
}

/** The app's one Prisma client, created on first use (so `next build` never needs a database). */
export function db(): PrismaClient {
  return processSingleton(PRISMA, () => new PrismaClient({ adapter: new PrismaPg(pool()) }));
}

/** Runs one read statement ($1..$n parameters) and returns its rows: sqlQuery, or one that adds to it. */
export type SqlRunner = <Row extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<Row[]>;

/**
 * A prepared statement run on the same pool without Prisma's query machinery: only for the
 * statements every API request runs (key lookup, order page), where that machinery was most of
 * the CPU per request, and naming the statement (PostgreSQL keeps its plan per connection) saved
 * another sixth (bench/api-list.ts). The name comes from the text, so changed SQL never meets an
 * old statement. A plan made stale by a migration under a running instance ("cached plan must not
 * change result type") costs that connection: it is closed and the query runs once more on a
 * fresh one. Behind PgBouncer, use session pooling (or its prepared-statement support).
 * `timeoutMs` gives this statement its own client-side deadline (lib/db/timeouts.ts).
 */
export async function sqlQuery<Row extends pg.QueryResultRow>(
  text: string,
  values: unknown[],
  { timeoutMs }: { timeoutMs?: number } = {},
): Promise<Row[]> {
  const name = statementName(text);
  for (let attempt = 1; ; attempt++) {
    const client = await pool().connect();
    try {
      const result = await client.query<Row>({
        name,
        text,
        values,
        ...(timeoutMs ? { query_timeout: timeoutMs } : {}),
      });
      client.release();
      return result.rows;
    } catch (error) {
      const stale = isStalePlan(error);
      // A stale statement lives on that connection, and one the client stopped waiting for may
      // still be running on it: destroy it rather than return it to the pool.
      client.release(stale || isQueryReadTimeout(error) ? (error as Error) : undefined);
      if (!stale || attempt > 1) throw error;
    }
  }
}

/**
 * A statement (or several) on the app's pool without a prepared name, for a library that brings
 * its own SQL (pg-boss): the same pool and timeouts as the app's own queries. A connection whose
 * statement failed is closed, not reused. Answers node-postgres's result as it is.
 */
export async function poolQuery(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = await pool().connect();
  try {
    const result = await client.query(text, values);
    client.release();
    return result;
  } catch (error) {
    // A failed script may leave its connection inside an aborted transaction (`BEGIN; ...` that
    // stopped half-way): never hand that connection to the app's next query.
    client.release(error as Error);
    throw error;
  }
}

/** A write whose COMMIT went out but was never answered: it may or may not have been committed. */
export class CommitOutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super(`No answer to COMMIT (${(cause as Error)?.message}): the write may or may not have been made.`, { cause });
    this.name = "CommitOutcomeUnknownError";
  }
}

/**
 * One statement in a transaction of its own (BEGIN, the statement and COMMIT, each its own round
 * trip on one pool connection), for a write its caller retries when it surely failed. A single
 * statement the client stopped waiting for (a frozen server, lib/db/timeouts.ts) may still run and
 * commit when the server wakes; inside BEGIN it runs uncommitted and dies with the connection,
 * which is closed. So every failure means nothing was written, except a COMMIT sent and not
 * answered: CommitOutcomeUnknownError.
 */
export async function sqlTransaction(text: string, values: unknown[]): Promise<void> {
  const client = await pool().connect();
  try {
    await client.query("BEGIN");
    await client.query(text, values);
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  try {
    await client.query("COMMIT");
    client.release();
  } catch (error) {
    client.release(error as Error);
    // The server's own error answer means it rolled back; no answer leaves it open.
    throw error instanceof pg.DatabaseError ? error : new CommitOutcomeUnknownError(error);
  }
}

const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) statementNames.set(text, (name = `q_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`));
  return name;
}

/** 0A000 "cached plan must not change result type"; 26000 the statement is gone (e.g. DISCARD ALL). */
function isStalePlan(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === "0A000" || code === "26000";
}

/** Closes the pool (and Prisma on it); the next use opens new ones. */
export async function disconnectDb(): Promise<void> {
  await dropProcessSingleton<PrismaClient>(PRISMA)?.$disconnect();
  await dropProcessSingleton<pg.Pool>(POOL)?.end();
}

/**
 * Runs `task` while holding a session-level advisory lock, on a connection of its own (not the
 * pool's, which `task` may need all of): other processes asking for the same key wait their turn.
 * Ending the session releases the lock whatever happens to `task`.
 */
export async function withAdvisoryLock<T>(key: number, task: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  client.on("error", () => {}); // a dropped session fails the query below, not the process
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [key]);
    return await task();
  } finally {
    await client.end().catch(() => {});
  }
}

/** The URL the app connects to. The launcher sets it for the embedded default. */
function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error(
      "DATABASE_URL is not set. Start the app with `npm run dev` or `npm start`, which provide an embedded PostgreSQL, or set DATABASE_URL.",
    );
  }
  return url;
}
