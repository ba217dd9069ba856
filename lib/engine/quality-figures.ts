import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlIdentifier, sqlString } from "./engine";
import { previewValue, type Json } from "./preview-values";

/**
 * The figures of a publication's new parts for its quality report (contract Part 6), measured in an
 * engine process over the parts' Parquet renditions, never over the previous version's parts:
 * 1. one statement over every column at once (1,000 columns are one query, not 1,000): rows, nulls,
 *    approximate distinct count, min, max, mean, this version's deciles (numbers and dates) or its
 *    20 most frequent values (other types), and the counts of the new rows in the current version's
 *    bins (its stored edges or top values) for PSI;
 * 2. one more statement counting the new rows in their own bins, which is what the next version's
 *    PSI compares against (deciles of values with many ties do not hold a tenth each).
 * Dates and timestamps are binned on their epoch seconds, numbers as doubles, so a column whose type
 * widened (INTEGER to BIGINT or DOUBLE, DATE to TIMESTAMP) still compares; other values on their
 * first TOP_VALUE_CHARS characters as text.
 */

export type FigureKind = "number" | "time" | "other";

/** What a version keeps of a column for the next report: null count, distinct count, bins and their counts. */
export type ColumnFigures = {
  kind: FigureKind;
  nulls: number;
  distinct: number;
  /** Numbers and dates: the 9 decile edges, bins (-inf, e1], (e1, e2], ..., (e9, +inf). */
  edges?: number[];
  /** Other types: the most frequent values (as text), then one bin for every other value. */
  top?: string[];
  /** Rows in each bin, then the null count (null is a bin of its own). */
  bins: number[];
};
export type VersionFigures = { rows: number; columns: Record<string, ColumnFigures> };

export type MeasuredColumn = {
  name: string;
  type: string;
  nulls: number;
  distinct: number;
  min: Json;
  max: Json;
  mean: number | null;
  /** The new rows' counts over the current version's bins of this column (null bin last), if comparable. */
  againstPrevious: number[] | null;
};
export type QualityFigures = { rows: number; columns: MeasuredColumn[]; figures: VersionFigures };

export const TOP_VALUES = 20;
export const TOP_VALUE_CHARS = 100;
const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

const NUMBER_TYPE = /^(U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\))$/;
const TIME_TYPE = /^(DATE|TIMESTAMP.*)$/;
/** Types whose min and max are shown; nested values and blobs are not. */
const ORDERED_TYPE = /^(VARCHAR|BOOLEAN|UUID)$/;

export function kindOf(type: string): FigureKind {
  return NUMBER_TYPE.test(type) ? "number" : TIME_TYPE.test(type) ? "time" : "other";
}

/** A column's value as binned: a double for numbers and dates, text cut to TOP_VALUE_CHARS for others. */
function binnedValue(column: string, kind: FigureKind): string {
  if (kind === "number") return `CAST(${column} AS DOUBLE)`;
  if (kind === "time") return `epoch(${column})`;
  return `left(CAST(${column} AS VARCHAR), ${TOP_VALUE_CHARS})`;
}

/**
 * The aggregate counting a column's values in bins (nulls are not counted: they are a bin of their
 * own): DuckDB's `histogram` over the edges (one entry per edge in order, then one for values above
 * the last when there are any), or `histogram_exact` over the top values (one entry per value, then
 * every other value). Null when there is nothing to count in (no top values).
 */
function binsAggregate(column: string, kind: FigureKind, bins: { edges?: number[]; top?: string[] }): string | null {
  const value = binnedValue(column, kind);
  if (bins.top) {
    return bins.top.length ? `histogram_exact(${value}, [${bins.top.map(sqlString).join(", ")}])` : null;
  }
  return `histogram(${value}, CAST([${(bins.edges ?? []).map(doubleLiteral).join(", ")}] AS DOUBLE[]))`;
}

const doubleLiteral = (value: number) => `CAST(${sqlString(String(value))} AS DOUBLE)`;

/**
 * Counts per bin, then the null count, from DuckDB's answer (see binsAggregate): edge bins by
 * position (ascending bounds, the overflow entry last), top values by their key (histogram_exact
 * answers in its own order), every value not counted so being in the last bin.
 */
function countsOf(
  histogram: Json,
  bins: { edges?: number[]; top?: string[] },
  nonNull: number,
  nulls: number,
): number[] {
  const size = binCount(bins);
  const counts = Array.from({ length: size }, () => 0);
  const entries = Array.isArray(histogram) ? (histogram as { key: Json; value: Json }[]) : [];
  if (bins.top) {
    const found = new Map(entries.map((entry) => [String(entry.key), Number(entry.value)]));
    bins.top.forEach((value, index) => (counts[index] = found.get(value) ?? 0));
  } else {
    for (const [index, entry] of entries.entries()) counts[Math.min(index, size - 1)]! += Number(entry.value);
  }
  if (bins.top) counts[size - 1] = Math.max(0, nonNull - counts.reduce((sum, count) => sum + count, 0));
  return [...counts, nulls];
}

const binCount = (bins: { edges?: number[]; top?: string[] }) =>
  bins.top ? bins.top.length + 1 : bins.edges!.length + 1;

/** Measures the parts (see above); `previous` is the current version's figures, null when there are none. */
export async function measureQuality(
  connection: DuckDBConnection,
  input: { parts: string[]; previous: VersionFigures | null },
): Promise<QualityFigures> {
  const files = `read_parquet([${input.parts.map(sqlString).join(", ")}])`;
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${files}`);
  const columns = described.getRowObjectsJson().map((row) => {
    const type = String(row.column_type);
    return { name: String(row.column_name), type, kind: kindOf(type) };
  });
  // Columns in groups: each statement's aggregate states (sketches, digests) fit the engine's memory
  // limit whatever the width (1,000 columns at once ran out of 256 MB). Parquet reads only a group's columns.
  const result: QualityFigures = { rows: 0, columns: [], figures: { rows: 0, columns: {} } };
  for (let start = 0; start < Math.max(columns.length, 1); start += COLUMNS_PER_STATEMENT) {
    const group = await measureGroup(
      connection,
      files,
      columns.slice(start, start + COLUMNS_PER_STATEMENT),
      input.previous,
    );
    result.rows = group.rows;
    result.figures.rows = group.rows;
    result.columns.push(...group.columns);
    Object.assign(result.figures.columns, group.figures.columns);
  }
  return result;
}

/** Columns measured in one statement (plus one for their own bins). */
export const COLUMNS_PER_STATEMENT = 50;

async function measureGroup(
  connection: DuckDBConnection,
  files: string,
  columns: { name: string; type: string; kind: FigureKind }[],
  previousFigures: VersionFigures | null,
): Promise<QualityFigures> {
  const input = { previous: previousFigures };
  const select = ["count(*)"];
  const slot = (expression: string) => select.push(expression) - 1;
  const slotOf = (expression: string | null) => (expression === null ? -2 : slot(expression));
  const plan = columns.map((column) => {
    const sql = sqlIdentifier(column.name);
    const previous = input.previous?.columns[column.name];
    const comparable = previous && previous.kind === column.kind ? previous : undefined;
    const ordered = column.kind !== "other" || ORDERED_TYPE.test(column.type);
    return {
      ...column,
      comparable,
      nonNull: slot(`count(${sql})`),
      distinct: slot(`approx_count_distinct(${sql})`),
      min: ordered ? slot(`min(${sql})`) : -1,
      max: ordered ? slot(`max(${sql})`) : -1,
      mean: column.kind === "number" ? slot(`avg(CAST(${sql} AS DOUBLE))`) : -1,
      own:
        column.kind === "other"
          ? slot(`approx_top_k(${binnedValue(sql, "other")}, ${TOP_VALUES})`)
          : slot(`approx_quantile(${binnedValue(sql, column.kind)}, [${DECILES.join(", ")}])`),
      against: comparable ? slotOf(binsAggregate(sql, column.kind, comparable)) : -1,
    };
  });
  const [row = []] = (await connection.runAndReadAll(`SELECT ${select.join(", ")} FROM ${files}`)).getRowsJson();
  const rows = Number(row[0] ?? 0);

  const measured = plan.map((column) => {
    const nulls = rows - Number(row[column.nonNull] ?? 0);
    const own = row[column.own];
    const bins =
      column.kind === "other"
        ? { top: (Array.isArray(own) ? own : []).filter((value) => value !== null).map(String) }
        : {
            edges: [...new Set((Array.isArray(own) ? own : []).map(Number).filter(Number.isFinite))].sort(
              (a, b) => a - b,
            ),
          };
    const mean = column.mean >= 0 ? Number(row[column.mean]) : Number.NaN;
    return {
      column,
      bins,
      result: {
        name: column.name,
        type: column.type,
        nulls,
        // HyperLogLog can overshoot a small column: never more distinct values than values.
        distinct: Math.min(Number(row[column.distinct] ?? 0), rows - nulls),
        min: column.min >= 0 ? previewValue((row[column.min] ?? null) as Json, column.type) : null,
        max: column.max >= 0 ? previewValue((row[column.max] ?? null) as Json, column.type) : null,
        mean: row[column.mean] !== null && Number.isFinite(mean) ? mean : null,
        againstPrevious: column.comparable
          ? countsOf(column.against >= 0 ? (row[column.against] as Json) : null, column.comparable, rows - nulls, nulls)
          : null,
      } satisfies MeasuredColumn,
    };
  });

  // This version's own bins, for the next report.
  const ownSelect = measured.map(({ column, bins }) => binsAggregate(sqlIdentifier(column.name), column.kind, bins));
  const counted = ownSelect.flatMap((aggregate) => (aggregate ? [aggregate] : []));
  const [ownValues = []] = counted.length
    ? (await connection.runAndReadAll(`SELECT ${counted.join(", ")} FROM ${files}`)).getRowsJson()
    : [[]];
  let next = 0;
  const ownRow = ownSelect.map((aggregate) => (aggregate ? ownValues[next++] : null));
  const figures: VersionFigures = { rows, columns: {} };
  for (const [index, { column, bins, result }] of measured.entries()) {
    figures.columns[column.name] = {
      kind: column.kind,
      nulls: result.nulls,
      distinct: result.distinct,
      ...bins,
      bins: countsOf((ownRow[index] ?? null) as Json, bins, rows - result.nulls, result.nulls),
    };
  }
  return { rows, columns: measured.map(({ result }) => result), figures };
}
