import { JsonDuckDBValueConverter, type DuckDBResult } from "@duckdb/node-api";
import { AppError } from "../errors";
import { formatBytes } from "../format";
import { previewValue, type Json } from "./preview-values";

/**
 * A query's answer rows, read from DuckDB's stream chunk by chunk and written as JSON text as they
 * come, each counted against the answer's byte budget: past `limit` rows or `bytes` of JSON the
 * rest is never converted, so no answer larger than its budget is ever built, sent to the server
 * or stringified there (contract Part 8, "Answer budget"). The server splices the text into its
 * body as it is (lib/explore/answer-json.ts).
 */

export type AnswerColumn = { name: string; type: string };

export type AnswerRows = {
  columns: AnswerColumn[];
  /** The rows answered, a JSON array's text. */
  rowsJson: string;
  rowCount: number;
  /** Why rows were left out: more than `limit` (`rows`) or past the byte budget (`bytes`). */
  cut?: "rows" | "bytes";
};

export type AnswerBudget = {
  limit: number;
  /** The whole answer's budget: its columns, its rows and its envelope. */
  bytes: number;
};

/** What an answer's other members take beside its columns and rows (version, next_offset, truncated...). */
const ENVELOPE_BYTES = 256;
/** The widest columns a refusal names. */
const NAMED_COLUMNS = 3;

export async function answerRows(result: DuckDBResult, budget: AnswerBudget): Promise<AnswerRows> {
  // Each call of columnTypes() makes every column's type: once, not once per column (2,500 columns took 40 s).
  const stored = result.columnTypes();
  const columns = result.columnNames().map((name, index) => ({
    name,
    type: String(stored[index]),
  }));
  const types = columns.map(({ type }) => type);
  let room = budget.bytes - ENVELOPE_BYTES - Buffer.byteLength(JSON.stringify(columns));
  const rows: string[] = [];
  for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) {
    for (let index = 0; index < chunk.rowCount; index++) {
      if (rows.length === budget.limit) return answered(columns, rows, "rows");
      const row = chunk
        .convertRowValues(index, JsonDuckDBValueConverter)
        .map((value, column) => previewValue(value as Json, types[column]!));
      const json = JSON.stringify(row);
      // A comma between rows.
      room -= Buffer.byteLength(json) + 1;
      if (room < 0) {
        if (rows.length === 0) throw rowTooLarge(columns, row, budget.bytes);
        return answered(columns, rows, "bytes");
      }
      rows.push(json);
    }
  }
  return answered(columns, rows);
}

function answered(columns: AnswerColumn[], rows: string[], cut?: "rows" | "bytes"): AnswerRows {
  return { columns, rowsJson: `[${rows.join(",")}]`, rowCount: rows.length, ...(cut ? { cut } : {}) };
}

/** answer_too_large, naming the widest columns of the row that alone is over the budget. */
function rowTooLarge(columns: AnswerColumn[], row: Json[], budget: number): AppError {
  const widest = row
    .map((value, index) => ({ name: columns[index]!.name, bytes: Buffer.byteLength(JSON.stringify(value)) }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, NAMED_COLUMNS)
    .map(({ name, bytes }) => `${JSON.stringify(name.slice(0, 100))} (${formatBytes(bytes)})`);
  return new AppError(
    "answer_too_large",
    `One row of this answer is larger than an answer may be (${formatBytes(budget)}, with its ${columns.length} ` +
      `columns); the widest: ${widest.join(", ")}. Choose fewer or narrower columns.`,
  );
}
