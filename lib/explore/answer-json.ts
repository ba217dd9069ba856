import type { AnswerColumn, AnswerRows } from "../engine/answer-rows";
import type { Json } from "../engine/preview-values";

/**
 * The answer budget (contract Part 8): a /rows or /sql answer is at most `QUERY_ANSWER_MAX_BYTES`
 * of JSON (default 8 MiB), the whole body; an MCP tool's at most MCP_ANSWER_MAX_BYTES. The engine
 * counts it as rows stream (lib/engine/answer-rows.ts) and hands over the rows as JSON text, which
 * the answer takes as it is: the server neither parses nor stringifies them again.
 */

const DEFAULT_ANSWER_MAX_BYTES = 8 * 1024 * 1024;
/** An agent's context is small: an MCP tool's whole answer (structured content and text) is at most this. */
export const MCP_ANSWER_MAX_BYTES = 256 * 1024;

export function queryAnswerMaxBytes(): number {
  const bytes = Number(process.env.QUERY_ANSWER_MAX_BYTES || DEFAULT_ANSWER_MAX_BYTES);
  if (!Number.isSafeInteger(bytes) || bytes < 1024) {
    throw new Error(
      `QUERY_ANSWER_MAX_BYTES must be a whole number of bytes, at least 1024, got "${process.env.QUERY_ANSWER_MAX_BYTES}".`,
    );
  }
  return bytes;
}

/** An answer cut by the budget or the limit: its columns, its rows' JSON text, and why rows were left out. */
export type BudgetedAnswer = { columns: AnswerColumn[]; rowsJson: string; rowCount: number; cut?: AnswerRows["cut"] };

/** `{...before, "rows": <rows as the engine wrote them>, ...after}` as JSON text. */
export function answerJson(before: Record<string, unknown>, rowsJson: string, after: Record<string, unknown>): string {
  const head = JSON.stringify(before);
  const tail = JSON.stringify(after);
  return `${head.slice(0, -1)}${head.length > 2 ? "," : ""}"rows":${rowsJson}${tail.length > 2 ? `,${tail.slice(1)}` : "}"}`;
}

/** The rows themselves, for the callers that show or render them (the dashboard, MCP). */
export const parsedRows = (answer: { rowsJson: string }): Json[][] => JSON.parse(answer.rowsJson) as Json[][];
