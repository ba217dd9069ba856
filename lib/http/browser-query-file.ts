import type { orderSqlParquet } from "../explore/sql";
import { processSingleton } from "../singleton";

/**
 * The Query page's result as Parquet, for the browser: written by DuckDB in the engine's pool,
 * which a Next.js bundle cannot carry, so the launcher hands the function over here (as it does
 * the other explore functions, lib/http/browser-explore.ts); only its type is imported.
 */

const QUERY_PARQUET = "explore:query-parquet";

/** Called once by the launcher (scripts/http-server.ts) before it serves. */
export function provideQueryParquet(write: typeof orderSqlParquet): void {
  processSingleton(QUERY_PARQUET, () => write);
}

export type ParquetResult = { ok: true; body: Buffer; truncated: boolean } | { ok: false; error: string; code: string };

/** The buyer's query on their order, its first `limit` rows as Parquet, or the refusal to show. */
export async function browserSqlParquet(
  target: { buyerId: string; orderId: string },
  sql: string,
  limit: number,
): Promise<ParquetResult> {
  const write = processSingleton<typeof orderSqlParquet>(QUERY_PARQUET, () => {
    throw new Error("The Query page's Parquet writer was not provided: start the app with scripts/serve.ts.");
  });
  try {
    return { ok: true, ...(await write({ ...target, sql, limit })) };
  } catch (error) {
    // An AppError of either copy of lib/errors.ts (the launcher's or the bundle's), known by its shape.
    const code: unknown = (error as { code?: unknown } | undefined)?.code;
    if (error instanceof Error && error.name === "AppError" && typeof code === "string")
      return { ok: false, error: error.message, code };
    throw error;
  }
}
