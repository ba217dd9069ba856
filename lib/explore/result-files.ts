import { formulaSafe } from "../csv-formulas";
import type { Json } from "../engine/preview-values";

/** The formats a Query page result downloads as (Parquet is written by DuckDB in the engine: lib/explore/sql.ts). */
export const RESULT_FORMATS = ["csv", "json", "parquet"] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

type Result = { columns: { name: string }[]; rows: Json[][]; truncated: boolean };

/**
 * A query's result as a file a person opens: CSV (RFC 4180, a header row, CRLF, every text value
 * formula-safe as in the CSV renditions; null an empty cell, a nested value its JSON) or JSON
 * (one object per row under `rows`, with `columns` and `truncated`).
 */
export function resultFile(
  result: Result,
  format: Exclude<ResultFormat, "parquet">,
): { body: string; contentType: string } {
  if (format === "json") {
    const rows = result.rows.map((row) =>
      Object.fromEntries(result.columns.map((column, at) => [column.name, row[at]])),
    );
    return {
      body: `${JSON.stringify({ columns: result.columns, rows, truncated: result.truncated })}\n`,
      contentType: "application/json; charset=utf-8",
    };
  }
  const lines = [result.columns.map((column) => csvCell(column.name)), ...result.rows.map((row) => row.map(csvCell))];
  return { body: lines.map((cells) => `${cells.join(",")}\r\n`).join(""), contentType: "text/csv; charset=utf-8" };
}

function csvCell(value: Json): string {
  if (value === null) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  const safe = typeof value === "string" ? formulaSafe(text) : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
