import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlIdentifier, sqlString } from "./engine";
import { previewValue, type Json } from "./preview-values";

/**
 * The figures of a publication's new parts for its quality report (contract Part 6), measured in an
 * engine process over the parts' Parquet renditions, never over the previous version's parts:
 * 1. one statement over every row and column at once (1,000 columns are one query, not 1,000):
 *    rows, nulls, approximate distinct count, min, max, mean;
 * 2. the bins, on a sample of BIN_SAMPLE_ROWS of the new rows (binsFromSample): this version's deciles
 *    (numbers and dates) or 20 most frequent values (other types), and the rows in them, which is
 *    what the next version's PSI compares against (deciles of values with many ties do not hold a
 *    tenth each, so the counts are kept, not assumed), and in the current version's stored bins.
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
  const select = ["count(*)"];
  const slot = (expression: string) => select.push(expression) - 1;
  const plan = columns.map((column) => {
    const sql = sqlIdentifier(column.name);
    const ordered = column.kind !== "other" || ORDERED_TYPE.test(column.type);
    return {
      ...column,
      nonNull: slot(`count(${sql})`),
      distinct: slot(`approx_count_distinct(${sql})`),
      min: ordered ? slot(`min(${sql})`) : -1,
      max: ordered ? slot(`max(${sql})`) : -1,
      mean: column.kind === "number" ? slot(`avg(CAST(${sql} AS DOUBLE))`) : -1,
    };
  });
  const [row = []] = (await connection.runAndReadAll(`SELECT ${select.join(", ")} FROM ${files}`)).getRowsJson();
  const rows = Number(row[0] ?? 0);
  const nonNull = plan.map((column) => Number(row[column.nonNull] ?? 0));
  const binned = await binsFromSample(connection, files, columns, previousFigures, nonNull);
  const figures: VersionFigures = { rows, columns: {} };
  const measured = plan.map((column, index) => {
    const nulls = rows - nonNull[index]!;
    const mean = column.mean >= 0 ? Number(row[column.mean]) : Number.NaN;
    const { own, ownCounts, againstPrevious } = binned[index]!;
    // HyperLogLog can overshoot a small column: never more distinct values than values.
    const distinct = Math.min(Number(row[column.distinct] ?? 0), rows - nulls);
    figures.columns[column.name] = { kind: column.kind, nulls, distinct, ...own, bins: [...ownCounts, nulls] };
    return {
      name: column.name,
      type: column.type,
      nulls,
      distinct,
      min: column.min >= 0 ? previewValue((row[column.min] ?? null) as Json, column.type) : null,
      max: column.max >= 0 ? previewValue((row[column.max] ?? null) as Json, column.type) : null,
      mean: row[column.mean] !== null && Number.isFinite(mean) ? mean : null,
      againstPrevious: againstPrevious && [...againstPrevious, nulls],
    } satisfies MeasuredColumn;
  });
  return { rows, columns: measured, figures };
}

/** Rows of the new parts the bins are measured on (all of them when fewer). */
export const BIN_SAMPLE_ROWS = 100_000;
const SAMPLE_TABLE = '"__quality sample"';

type Bins = { edges?: number[]; top?: string[] };

/**
 * Each column's bins, measured on a reservoir sample of the new rows (a fixed seed: the same parts
 * give the same figures): this version's own bins (the deciles of numbers and dates, the most
 * frequent values of others), and the sample's counts in them and in the current version's bins,
 * scaled to the column's non-null rows. PSI compares proportions: a sample of 100,000 rows puts
 * each bin's within a few tenths of a percent, far inside the 0.25 a shift must pass, and sketching
 * and binning 100,000 rows instead of every row is most of what the report would cost.
 */
async function binsFromSample(
  connection: DuckDBConnection,
  files: string,
  columns: { name: string; kind: FigureKind }[],
  previous: VersionFigures | null,
  nonNull: number[],
): Promise<{ own: Bins; ownCounts: number[]; againstPrevious: number[] | null }[]> {
  if (columns.length === 0) return [];
  const names = columns.map((column) => sqlIdentifier(column.name));
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${SAMPLE_TABLE} AS SELECT ${names.join(", ")} FROM ${files}
     USING SAMPLE reservoir(${BIN_SAMPLE_ROWS} ROWS) REPEATABLE (1)`,
  );
  try {
    const sketches = columns.map((column, index) =>
      column.kind === "other"
        ? `approx_top_k(${binnedValue(names[index]!, "other")}, ${TOP_VALUES})`
        : `quantile_cont(${binnedValue(names[index]!, column.kind)}, [${DECILES.join(", ")}])`,
    );
    const [found = []] = (
      await connection.runAndReadAll(`SELECT ${sketches.join(", ")} FROM ${SAMPLE_TABLE}`)
    ).getRowsJson();
    const own: Bins[] = columns.map((column, index) => {
      const values = Array.isArray(found[index]) ? (found[index] as Json[]) : [];
      if (column.kind === "other") return { top: values.filter((value) => value !== null).map(String) };
      return { edges: [...new Set(values.map(Number).filter(Number.isFinite))].sort((a, b) => a - b) };
    });
    const comparable = columns.map((column) => {
      const before = previous?.columns[column.name];
      return before && before.kind === column.kind ? before : undefined;
    });
    const select = ["0"];
    const slot = (expression: string | null) => (expression === null ? -1 : select.push(expression) - 1);
    const slots = columns.map((column, index) => ({
      sampled: slot(`count(${names[index]})`),
      own: slot(binsAggregate(names[index]!, column.kind, own[index]!)),
      against: comparable[index] ? slot(binsAggregate(names[index]!, column.kind, comparable[index]!)) : -1,
    }));
    const [counted = []] = (
      await connection.runAndReadAll(`SELECT ${select.join(", ")} FROM ${SAMPLE_TABLE}`)
    ).getRowsJson();
    return columns.map((_, index) => {
      const sampled = Number(counted[slots[index]!.sampled] ?? 0);
      // The sample's counts, scaled from its non-null rows to the column's.
      const scaled = (histogram: Json, bins: Bins) =>
        countsOf(histogram, bins, sampled, 0)
          .slice(0, -1)
          .map((count) => (sampled > 0 ? Math.round((count * nonNull[index]!) / sampled) : 0));
      const at = (position: number) => (position >= 0 ? ((counted[position] ?? null) as Json) : null);
      return {
        own: own[index]!,
        ownCounts: scaled(at(slots[index]!.own), own[index]!),
        againstPrevious: comparable[index] ? scaled(at(slots[index]!.against), comparable[index]!) : null,
      };
    });
  } finally {
    await connection.run(`DROP TABLE IF EXISTS ${SAMPLE_TABLE}`);
  }
}
