/**
 * DuckDB values as the API's preview gives them (contract Part 3): JSON values in column order,
 * timestamps in ISO 8601, integers beyond JSON's exact range as strings. Pure: unit-tested.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Longer text values are cut in a preview (the download has them whole). */
export const PREVIEW_TEXT_LIMIT = 1000;

const BIG_INTEGER_TYPES = new Set(["BIGINT", "HUGEINT", "UBIGINT", "UHUGEINT"]);

/** One value of a column of DuckDB `type`, from DuckDB's JSON rendering (`getRowsJson`). */
export function previewValue(value: Json, type: string): Json {
  if (value === null) return null;
  if (typeof value === "string") {
    if (BIG_INTEGER_TYPES.has(type)) return exactNumber(value);
    const decimal = /^DECIMAL\((\d+),\d+\)$/.exec(type);
    if (decimal) return Number(decimal[1]) <= 15 ? Number(value) : value;
    if (type === "TIMESTAMP WITH TIME ZONE") return isoTimestamp(value).replace(/[+-]00(:00)?$/, "Z");
    if (type.startsWith("TIMESTAMP")) return isoTimestamp(value);
    if (value.length > PREVIEW_TEXT_LIMIT) return `${value.slice(0, PREVIEW_TEXT_LIMIT)}…`;
  }
  return value;
}

/** A whole number as a JSON number where it is exact there, else as its digits. */
function exactNumber(digits: string): number | string {
  const number = Number(digits);
  return Number.isSafeInteger(number) ? number : digits;
}

/** `2024-01-02 03:04:05.123` as `2024-01-02T03:04:05.123` (special values such as `infinity` as they are). */
const isoTimestamp = (value: string) => value.replace(/^(-?\d{4,}-\d{2}-\d{2}) (\d)/, "$1T$2");

/** Rows of DuckDB JSON values as preview rows. */
export function previewRows(rows: Json[][], types: string[]): Json[][] {
  return rows.map((row) => row.map((value, index) => previewValue(value, types[index] ?? "")));
}

/** A preview is stored with its file's row: rows past this much JSON are left out (very wide files). */
export const PREVIEW_MAX_BYTES = 1024 * 1024;

export function withinPreviewSize(rows: Json[][]): Json[][] {
  let bytes = 2;
  const kept: Json[][] = [];
  for (const row of rows) {
    bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
    if (bytes > PREVIEW_MAX_BYTES && kept.length > 0) break;
    kept.push(row);
  }
  return kept;
}
