import type { Json } from "../engine/preview-values";
import { AppError, inputMessage } from "../errors";
import { parsedRows } from "../explore/answer-json";
import { readTableRows } from "../explore/rows";
import { describeOrderTables, orderSqlParquet, runOrderSql } from "../explore/sql";

/**
 * Rows and SQL for the browser (the dashboard's Query page and filter bars, a share page's filter
 * bar): the API's own functions and checks, a refusal as the message to show with its code (an
 * invalid_filter or unknown_column detail names what to fix). The caller has already settled who
 * the buyer is: the session, or a share link's token for its one order.
 */

/** Rows a filtered preview shows at once. */
export const BROWSER_ROWS_PAGE = 20;

export type ResultColumn = { name: string; type: string };
export type RowsPage = { version: number; columns: ResultColumn[]; rows: Json[][]; next_offset: number | null };
export type SqlResult = {
  columns: ResultColumn[];
  rows: Json[][];
  truncated: boolean;
  truncated_reason?: "rows" | "bytes";
};

/** A refusal the page shows as it is: the message, and the code it came with. */
export type Refusal = { ok: false; error: string; code?: string };
export type RowsResult = { ok: true; page: RowsPage } | Refusal;
export type QueryResult = { ok: true; result: SqlResult } | Refusal;
export type ParquetResult = { ok: true; body: Buffer; truncated: boolean } | Refusal;

/** What a filter bar asks: the columns to show (none: all) and a where text (blank: every row). */
export type TableFilter = { columns?: string[]; where?: string; offset?: number };

/** Only the shape a filter bar sends is passed on; the domain checks what it means. */
export function tableFilterOf(input: unknown): TableFilter | undefined {
  if (typeof input !== "object" || input === null) return undefined;
  const { columns, where, offset } = input as Record<string, unknown>;
  if (columns !== undefined && !(Array.isArray(columns) && columns.every((name) => typeof name === "string")))
    return undefined;
  if (where !== undefined && typeof where !== "string") return undefined;
  if (offset !== undefined && !(Number.isSafeInteger(offset) && (offset as number) >= 0)) return undefined;
  return { columns: columns as string[] | undefined, where: where as string | undefined, offset: offset as number };
}

/** One page of a table's current version through the filter, for a preview's filter bar. */
export function browserTableRows(
  target: { buyerId: string; orderId: string; table: string },
  filter: TableFilter,
): Promise<RowsResult> {
  return refusalOr(async () => {
    const page = await readTableRows({
      ...target,
      columns: filter.columns?.length ? filter.columns : undefined,
      where: filter.where?.trim() ? filter.where : undefined,
      limit: BROWSER_ROWS_PAGE,
      offset: filter.offset ?? 0,
      via: { door: "rows" },
    });
    const { rowsJson, ...rest } = page;
    return { ok: true, page: { ...rest, rows: parsedRows({ rowsJson }) } };
  });
}

/**
 * One SELECT over the order's tables, for the Query page (or its download, with the largest limit);
 * `signal`, where the page's request has one, cancels it when the browser leaves.
 */
export function browserSql(
  target: { buyerId: string; orderId: string },
  sql: string,
  limit: number,
  signal?: AbortSignal,
): Promise<QueryResult> {
  return refusalOr(async () => {
    const answer = await runOrderSql({ ...target, sql, limit, via: { door: "query_page", signal } });
    const { columns, truncated, truncated_reason } = answer;
    return { ok: true, result: { columns, rows: parsedRows(answer), truncated, truncated_reason } };
  });
}

/** The same query's first `limit` rows as Parquet, written by DuckDB in the engine, for the Query page's download. */
export function browserSqlParquet(
  target: { buyerId: string; orderId: string },
  sql: string,
  limit: number,
  signal?: AbortSignal,
): Promise<ParquetResult> {
  return refusalOr(async () => ({
    ok: true,
    ...(await orderSqlParquet({ ...target, sql, limit, via: { door: "query_page", signal } })),
  }));
}

async function refusalOr<Result>(run: () => Promise<Result>): Promise<Result | Refusal> {
  try {
    return await run();
  } catch (error) {
    // The Query page has one text box: its refusals need not name it (lib/errors.ts inputMessage).
    if (error instanceof AppError) return { ok: false, error: inputMessage(error, { sql: null }), code: error.code };
    throw error;
  }
}

/** The order's tables and their columns, for the Query page's sidebar (order_not_delivered and the like thrown). */
export function browserOrderTables(buyerId: string, orderId: string): ReturnType<typeof describeOrderTables> {
  return describeOrderTables(buyerId, orderId);
}
