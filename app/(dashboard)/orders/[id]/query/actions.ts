"use server";

import { currentBuyer } from "@/lib/auth/session";
import { SQL_MAX_LENGTH, SQL_PAGE_LIMIT } from "@/lib/schemas/explore-limits";
import { queryHistory, recordQuery, type QueryHistoryEntry } from "@/lib/explore/history";
import { browserSql, type QueryResult } from "@/lib/http/browser-explore";

export type RunQueryResult = QueryResult & { history?: QueryHistoryEntry[] };

/**
 * Runs one SELECT of the signed-in buyer on one of their orders (the Query page) and records it in
 * their history, rows or refusal; answers the result and the history as it now is. The ids and the
 * text come from the client: runOrderSql checks the order is the buyer's, the text what it may do.
 */
export async function runQueryAction(orderId: unknown, sql: unknown, limit: unknown): Promise<RunQueryResult> {
  const buyer = await currentBuyer();
  if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
  if (typeof orderId !== "string") return { ok: false, error: "No such order here." };
  if (typeof sql !== "string" || !sql.trim()) return { ok: false, error: "Write a SELECT to run." };
  if (sql.length > SQL_MAX_LENGTH)
    return { ok: false, error: `A query has at most ${SQL_MAX_LENGTH.toLocaleString("en-US")} characters.` };
  const rows = typeof limit === "number" && Number.isSafeInteger(limit) ? limit : NaN;
  if (!(rows >= 1 && rows <= SQL_PAGE_LIMIT)) return { ok: false, error: `Show between 1 and ${SQL_PAGE_LIMIT} rows.` };
  const result = await browserSql({ buyerId: buyer.id, orderId }, sql, rows);
  // An order that is not the buyer's is not recorded (recordQuery checks it too).
  if (!result.ok && result.code === "order_not_found") return result;
  await recordQuery(buyer.id, orderId, {
    sql,
    rows: result.ok ? result.result.rows.length : null,
    error: result.ok ? null : result.error,
  });
  return { ...result, history: await queryHistory(buyer.id) };
}
