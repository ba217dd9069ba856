import {
  compareDecimals,
  decimalOfNumber,
  integerDigits,
  numberOfDecimal,
  parseDecimal,
  roundDecimal,
  type Decimal,
} from "./decimal-text";
import { sqlString } from "./engine";

/**
 * Per-column statistics of a Parquet file, read from its footer only (DuckDB's parquet_metadata(),
 * no data read), in the shape Delta Sharing's per-file `stats` gives them (PROTOCOL.md, "Per-file
 * Statistics"): `minValues`, `maxValues` and `nullCount` of the top-level columns whose statistics
 * give them. A bound is kept only when every row group has one (or holds only nulls), so `minValues`
 * is never above a value of the file and `maxValues` never below one; what cannot be said exactly is
 * left out, never guessed:
 *
 * - integers and decimals: JSON numbers whose text is the bound itself; DuckDB's exact text is
 *   kept when a double writes it back exactly, else rounded to 15 significant digits (which a
 *   double holds), the minimum down and the maximum up; a rounded bound outside the
 *   column's type (2^63 for BIGINT, the precision of a DECIMAL) leaves the column out;
 * - floats: JSON numbers (DuckDB writes them in their shortest exact form); not finite: left out;
 * - text: up to MAX_TEXT_STATS characters (a longer bound, or one holding a NUL, is left out);
 * - dates: `yyyy-mm-dd`; timestamps: ISO 8601 in UTC with milliseconds, the minimum rounded down and
 *   the maximum up to the millisecond;
 * - booleans and binary: `nullCount` only; nested columns: nothing.
 */

export type StatsValue = number | string;
export type ColumnStats = {
  minValues: Record<string, StatsValue>;
  maxValues: Record<string, StatsValue>;
  nullCount: Record<string, number>;
};

/** How a column's bounds are read and compared (also by lib/sharing/predicates.ts). */
export type StatsKind = "integer" | "decimal" | "float" | "text" | "date" | "timestamp" | "nulls-only";

/** The longest text bound kept (Delta's writers keep 32 characters). */
export const MAX_TEXT_STATS = 64;

/** The largest instant a JavaScript Date holds (±100,000,000 days). */
const MAX_DATE_MS = 8.64e15;

/** The kind of a top-level column of DuckDB type `type`; undefined for nested and unknown types. */
export function statsKindOf(type: string): StatsKind | undefined {
  const upper = type.toUpperCase();
  if (/^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|HUGEINT|UHUGEINT)$/.test(upper))
    return "integer";
  if (/^DECIMAL\(\d+,\s*\d+\)$/.test(upper)) return "decimal";
  if (upper === "FLOAT" || upper === "DOUBLE") return "float";
  if (upper === "VARCHAR") return "text";
  if (upper === "DATE") return "date";
  if (/^TIMESTAMP(_S|_MS|_NS)?( WITH TIME ZONE)?$/.test(upper) || upper === "TIMESTAMPTZ") return "timestamp";
  if (upper === "BOOLEAN" || upper === "BLOB") return "nulls-only";
  return undefined;
}

/** The type a column's footer bounds are read as: timestamps of any unit or zone as TIMESTAMPTZ (UTC). */
const boundType = (kind: StatsKind, type: string) => (kind === "timestamp" ? "TIMESTAMPTZ" : type);

/** A bound of the footer (`stats_min_value` or `stats_max_value`) read as its column's type. */
const typedBound = (field: string, kind: StatsKind, type: string) =>
  kind === "text" ? field : `TRY_CAST(${field} AS ${boundType(kind, type)})`;

/** Microseconds (an integer expression) to milliseconds, rounded toward minus infinity. */
const floorMs = (us: string) => `((${us}) - ((((${us}) % 1000) + 1000) % 1000)) // 1000`;

/** The smallest minimum and largest maximum of the row groups, as text (timestamps as epoch milliseconds). */
function boundsSql(kind: StatsKind, type: string): { min: string; max: string } {
  const min = `min(${typedBound("stats_min_value", kind, type)})`;
  const max = `max(${typedBound("stats_max_value", kind, type)})`;
  if (kind === "timestamp") {
    // The minimum rounded down to the millisecond, the maximum up, in integers (epoch_ms() rounds
    // toward zero, up before 1970; a double loses microseconds past 2255). Nanoseconds reach here
    // cut to microseconds (toward zero): one microsecond more each way covers the cut.
    const slack = /_NS/i.test(type) ? 1 : 0;
    return {
      min: `CAST(${floorMs(`epoch_us(${min}) - ${slack}`)} AS VARCHAR)`,
      max: `CAST(${floorMs(`epoch_us(${max}) + ${slack} + 999`)} AS VARCHAR)`,
    };
  }
  return { min: `CAST(${min} AS VARCHAR)`, max: `CAST(${max} AS VARCHAR)` };
}

/**
 * One statement that reads `file`'s footer once (parquet_metadata() parses it on every call, so a
 * scan per column made the cost grow with the square of the columns): per column, its null count
 * (null when a row group lacks one), its bounds as text, and whether every row group gave both
 * bounds (or held only nulls). Columns of one type share one grouped scan of the footer's rows.
 */
export function columnStatsQuery(file: string, columns: { name: string; type: string }[]): string | null {
  const byType = new Map<string, { kind: StatsKind; names: string[] }>();
  for (const { name, type } of columns) {
    const kind = statsKindOf(type);
    if (!kind) continue;
    const group = byType.get(type) ?? { kind, names: [] };
    group.names.push(name);
    byType.set(type, group);
  }
  const selects = [...byType].map(([type, { kind, names }]) => {
    const bounded =
      kind === "nulls-only"
        ? "false"
        : `bool_and((${typedBound("stats_min_value", kind, type)} IS NOT NULL AND ${typedBound("stats_max_value", kind, type)} IS NOT NULL) OR stats_null_count = num_values)`;
    const bounds = kind === "nulls-only" ? { min: "NULL", max: "NULL" } : boundsSql(kind, type);
    return `SELECT path_in_schema AS name,
         CASE WHEN count(*) = count(stats_null_count) THEN CAST(sum(stats_null_count) AS BIGINT) END AS nulls,
         ${bounds.min} AS min_value, ${bounds.max} AS max_value, ${bounded} AS bounded
       FROM footer WHERE path_in_schema IN (${names.map(sqlString).join(", ")}) GROUP BY path_in_schema`;
  });
  if (selects.length === 0) return null;
  return `WITH footer AS MATERIALIZED (
       SELECT path_in_schema, stats_min_value, stats_max_value, stats_null_count, num_values
       FROM parquet_metadata(${sqlString(file)}))
     ${selects.join("\nUNION ALL\n")}`;
}

export type ColumnStatsRow = {
  name: string;
  nulls: string | number | null;
  min_value: string | null;
  max_value: string | null;
  bounded: boolean | null;
};

/** The statistics of the columns from the rows of columnStatsQuery. */
export function columnStatsFrom(columns: { name: string; type: string }[], rows: ColumnStatsRow[]): ColumnStats {
  const stats: ColumnStats = { minValues: {}, maxValues: {}, nullCount: {} };
  const types = new Map(columns.map((column) => [column.name, column.type]));
  for (const row of rows) {
    const type = types.get(row.name);
    const kind = type === undefined ? undefined : statsKindOf(type);
    if (!kind || type === undefined) continue;
    if (row.nulls !== null && row.nulls !== undefined) stats.nullCount[row.name] = Number(row.nulls);
    if (kind === "nulls-only" || !row.bounded || row.min_value === null || row.max_value === null) continue;
    const min = boundValue(kind, type, row.min_value, "down");
    const max = boundValue(kind, type, row.max_value, "up");
    if (min === undefined || max === undefined) continue;
    stats.minValues[row.name] = min;
    stats.maxValues[row.name] = max;
  }
  return stats;
}

/** The signed range of DuckDB's integer types, by name (their footer bounds are read as that type). */
const INTEGER_RANGES: Record<string, [bigint, bigint]> = {
  TINYINT: [-(2n ** 7n), 2n ** 7n - 1n],
  SMALLINT: [-(2n ** 15n), 2n ** 15n - 1n],
  INTEGER: [-(2n ** 31n), 2n ** 31n - 1n],
  BIGINT: [-(2n ** 63n), 2n ** 63n - 1n],
  HUGEINT: [-(2n ** 127n), 2n ** 127n - 1n],
  UTINYINT: [0n, 2n ** 8n - 1n],
  USMALLINT: [0n, 2n ** 16n - 1n],
  UINTEGER: [0n, 2n ** 32n - 1n],
  UBIGINT: [0n, 2n ** 64n - 1n],
  UHUGEINT: [0n, 2n ** 128n - 1n],
};

/** Whether a rounded bound is still a value of the column's type (a reader parses it as that type). */
function fitsType(kind: "integer" | "decimal", type: string, value: Decimal): boolean {
  if (kind === "decimal") {
    const [, precision, scale] = /^DECIMAL\((\d+),\s*(\d+)\)$/i.exec(type) ?? [];
    return integerDigits(value) <= Number(precision) - Number(scale);
  }
  const range = INTEGER_RANGES[type.toUpperCase()];
  if (!range) return false;
  const [low, high] = range.map((limit) => ({ coefficient: limit, exponent: 0 }));
  return compareDecimals(value, low!) >= 0 && compareDecimals(value, high!) <= 0;
}

/** A bound as published: `side` says which way an inexact one is rounded (a minimum down, a maximum up). */
function boundValue(kind: StatsKind, type: string, text: string, side: "down" | "up"): StatsValue | undefined {
  switch (kind) {
    case "integer":
    case "decimal": {
      const exact = parseDecimal(text);
      if (!exact) return undefined;
      // Kept as it is when a double writes it back exactly (2^53 - 1, 9.25); else rounded outward.
      const asNumber = Number(text);
      const same = decimalOfNumber(asNumber);
      if (same && compareDecimals(same, exact) === 0) return asNumber;
      const rounded = roundDecimal(exact, side);
      return fitsType(kind, type, rounded) ? numberOfDecimal(rounded) : undefined;
    }
    case "float": {
      const value = Number(text);
      return Number.isFinite(value) ? value : undefined;
    }
    case "text":
      // A NUL cannot be stored (PostgreSQL's jsonb refuses it) and escaping it would move the bound: left out.
      return [...text].length <= MAX_TEXT_STATS && !text.includes("\u0000") ? text : undefined;
    case "date":
      return /^\d{4}-\d{2}-\d{2}$/.test(text) ? text : undefined;
    case "timestamp": {
      const value = Number(text);
      return Number.isSafeInteger(value) && Math.abs(value) <= MAX_DATE_MS ? new Date(value).toISOString() : undefined;
    }
    case "nulls-only":
      return undefined;
  }
}
