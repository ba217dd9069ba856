/**
 * DuckDB values as the API's preview gives them (contract Part 3): JSON values in column order,
 * timestamps in ISO 8601, integers beyond JSON's exact range and decimals as strings. Pure: unit-tested.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Longer text values are cut in a preview, at any depth (the download has them whole). */
export const PREVIEW_TEXT_LIMIT = 1000;

/**
 * A value's JSON in a preview is at most this long: a nested value beyond it (a list of thousands of
 * short strings, a wide struct) is shown as its JSON text, cut at PREVIEW_TEXT_LIMIT characters.
 */
export const PREVIEW_CELL_MAX_CHARS = 4096;

const BIG_INTEGER_TYPES = new Set(["BIGINT", "HUGEINT", "UBIGINT", "UHUGEINT"]);

/** One value of a column of DuckDB `type`, from DuckDB's JSON rendering (`getRowsJson`). */
export function previewValue(value: Json, type: string): Json {
  if (value === null) return null;
  if (typeof value === "string") {
    if (BIG_INTEGER_TYPES.has(type)) return exactNumber(value);
    // Every DECIMAL as DuckDB writes it, scale kept ("1.50"): a JSON number would drop it (1.5).
    if (type.startsWith("DECIMAL(")) return value;
    if (type === "TIMESTAMP WITH TIME ZONE") return isoTimestamp(value).replace(/[+-]00(:00)?$/, "Z");
    if (type.startsWith("TIMESTAMP")) return isoTimestamp(value);
    return cutText(value);
  }
  if (typeof value !== "object") return value;
  const nested = cutNestedText(value);
  const json = JSON.stringify(nested);
  return json.length > PREVIEW_CELL_MAX_CHARS ? cutText(json) : nested;
}

const cutText = (text: string) => (text.length > PREVIEW_TEXT_LIMIT ? `${text.slice(0, PREVIEW_TEXT_LIMIT)}…` : text);

/** A struct's or list's values with every text cut (keys are column names: kept). */
function cutNestedText(value: Json): Json {
  if (typeof value === "string") return cutText(value);
  if (Array.isArray(value)) return value.map(cutNestedText);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, cutNestedText(inner)]));
}

/**
 * A JSON value PostgreSQL can store: it refuses the NUL character (22P05) in json and text, so
 * every NUL in a string or key becomes the six characters `\u0000`, which is how a preview shows it.
 */
export function withoutNul<T extends Json>(value: T): T {
  if (typeof value === "string") return (value.includes("\0") ? value.replaceAll("\0", "\\u0000") : value) as T;
  if (Array.isArray(value)) return value.map(withoutNul) as T;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [withoutNul(key), withoutNul(inner)])) as T;
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
