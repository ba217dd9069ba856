import type { DuckDBConnection } from "@duckdb/node-api";
import { formulaSafeSql } from "../csv-formulas";
import {
  CHANGE_TYPE_COLUMN,
  CHANGE_TYPES,
  changeFileQuery,
  type ChangeFileInput,
  type ChangeType,
} from "./change-feed";
import { columnStatsFrom, columnStatsQuery, type ColumnStats, type ColumnStatsRow } from "./parquet-stats";
import { checkGzipExpansion, checkLooksLike, UnreadableFileError } from "./checks";
import { CSV_DELIMITERS, readerSql, sqlIdentifier, sqlString } from "./engine";
import type { Compression, DataFormat, RenditionFormat } from "../data-formats";
import { previewRows, withinPreviewSize, type Json } from "./preview-values";
import { measureQuality, type QualityFigures, type VersionFigures } from "./quality-figures";
import { portableSelectList } from "./spark-schema";
import { QUERY_TASKS } from "./query-tasks";
import type { Column } from "./columns";

/**
 * The work DuckDB does, run only in an engine process (./engine-child.ts), never in one that serves
 * requests. Each task gets a DuckDB instance of its own that can reach nothing but the task's
 * directory and the files handed to it (`allowed_directories`, `allowed_paths`, external access
 * off, configuration locked), spills there, and is closed after its answer is sent (./task-runner.ts);
 * a buyer's read-only query runs instead on the instance its process keeps for exactly its files
 * (./kept-engine.ts), on a connection of its own.
 */

/** Rows kept for the preview: the API's `limit` goes up to this. */
export const PREVIEW_ROWS = 100;

export type { Column };
export type Profile = { columns: Column[]; rows: number; preview: Json[][] };

/**
 * What a task may touch: its own directory (read, write, spill) and the files it reads. A buyer's
 * query (./query-tasks.ts) also has a time limit of engine time, past which DuckDB is interrupted,
 * and a spill bound of its own (`DATASET_QUERY_SPILL_MAX`, default 1GB).
 */
export type EngineScope = { directory: string; readable: string[]; timeLimitMs?: number };

/**
 * `emptyTypes`: the table's columns, which a header-only CSV or TSV (see headerOnlyTypes) and a JSON
 * Lines file without a record (see recordlessJsonLines) take.
 */
type Source = { format: DataFormat; compression: Compression; emptyTypes?: Column[] };

export const ENGINE_TASKS = {
  /**
   * Reads what is inside one file: its columns (name, DuckDB type), its row count and its first
   * PREVIEW_ROWS rows. The count is DuckDB's `count(*)`, which reads every row (a ragged row fails
   * it) without converting every value. Whether a column holds nulls is what DuckDB's schema says
   * here (text formats: any column may) and is made exact from the Parquet rendition's statistics.
   */
  async profile(connection: DuckDBConnection, input: { file: string } & Source): Promise<Profile> {
    const reader = await checkedReader(connection, input.file, input);
    const columns = await columnsOf(connection, reader);
    const counted = await connection.runAndReadAll(`SELECT count(*) FROM ${reader}`);
    return {
      columns,
      rows: Number(counted.getRowsJson()[0]?.[0] ?? 0),
      preview: await previewOf(connection, reader, columns),
    };
  },

  /**
   * A text file's profile and its Parquet rendition from one read of its data: the columns from
   * DuckDB's schema, the rendition written as `rendition` writes it, the row count from the
   * rendition's footer, the first rows from the start of the file. Reading a large CSV once rather
   * than twice (profile, then rendition) is a third of a table's publication time (bench/tables.ts).
   */
  async profileWithParquet(
    connection: DuckDBConnection,
    input: { file: string; target: string } & Source,
  ): Promise<{ profile: Profile; nullCounts: Record<string, number>; stats: ColumnStats }> {
    const reader = await checkedReader(connection, input.file, input);
    const columns = await columnsOf(connection, reader);
    await connection.run(
      `COPY (SELECT ${portableSelectList(columns)} FROM ${reader}) TO ${sqlString(input.target)} (${COPY_OPTIONS.parquet})`,
    );
    const counted = await connection.runAndReadAll(
      `SELECT sum(num_rows) FROM parquet_file_metadata(${sqlString(input.target)})`,
    );
    const rows = Number(counted.getRowsJson()[0]?.[0] ?? 0);
    return {
      profile: { columns, rows, preview: await previewOf(connection, reader, columns) },
      nullCounts: await parquetNullCounts(connection, input.target),
      stats: await parquetColumnStats(connection, input.target),
    };
  },

  /**
   * Writes the data of `source` as `format` into `target`, streaming. Parquet (zstd) is written with
   * the column types Delta Sharing advertises (./spark-schema.ts) and answers each column's null
   * count from its own statistics (metadata only: no data read again); CSV, with a header row and
   * spreadsheet formulas made inert (lib/csv-formulas.ts); JSON Lines, one object per line.
   */
  async rendition(
    connection: DuckDBConnection,
    input: { source: string; from: Source & { columns?: Column[] }; format: RenditionFormat; target: string },
  ): Promise<{ nullCounts: Record<string, number> | null; stats: ColumnStats | null }> {
    const columns = input.from.columns?.length ? input.from.columns : undefined;
    // A header-only text file keeps the types its profile gave it (the table's: see headerOnlyTypes).
    const reader = await readerOf(connection, input.source, { ...input.from, emptyTypes: columns });
    const select =
      columns && input.format === "parquet"
        ? portableSelectList(columns)
        : columns && input.format === "csv"
          ? formulaSafeSelectList(columns)
          : "*";
    await connection.run(
      `COPY (SELECT ${select} FROM ${reader}) TO ${sqlString(input.target)} (${COPY_OPTIONS[input.format]})`,
    );
    if (input.format !== "parquet") return { nullCounts: null, stats: null };
    return {
      nullCounts: await parquetNullCounts(connection, input.target),
      stats: await parquetColumnStats(connection, input.target),
    };
  },

  /**
   * A version's key over its parts' Parquet renditions: never null (the first part holding a null
   * key is named) and, with `unique`, no key twice (the first such key and how often it occurs).
   * The grouping spills past the memory limit, so a version of any size is checked.
   */
  async checkKey(
    connection: DuckDBConnection,
    input: { parts: { name: string; path: string }[]; key: string[]; unique: boolean },
  ): Promise<KeyCheck> {
    const files = `[${input.parts.map((part) => sqlString(part.path)).join(", ")}]`;
    const key = input.key.map(sqlIdentifier);
    // Each row's file in a column of a name the data does not use (a data column may be `filename`).
    const partColumn = await unusedColumnName(connection, `read_parquet(${files})`, "part_file");
    const nulls = await connection.runAndReadAll(
      `SELECT ${sqlIdentifier(partColumn)} FROM read_parquet(${files}, filename = ${sqlString(partColumn)}) WHERE ${key.map((column) => `${column} IS NULL`).join(" OR ")} LIMIT 1`,
    );
    const nullIn = nulls.getRowsJson()[0]?.[0];
    if (nullIn !== undefined) {
      return { nullKeyIn: input.parts.find((part) => part.path === nullIn)?.name ?? String(nullIn) };
    }
    if (!input.unique) return {};
    // The values as text, as a person reads them in the failure's sentence.
    const duplicates = await connection.runAndReadAll(
      `SELECT ${key.map((column) => `CAST(${column} AS VARCHAR)`).join(", ")}, count(*) FROM read_parquet(${files}) GROUP BY ${key.join(", ")} HAVING count(*) > 1 LIMIT 1`,
    );
    const [row] = duplicates.getRowsJson() as Json[][];
    if (!row) return {};
    return { duplicate: { values: row.slice(0, key.length).map(String), count: Number(row[key.length]) } };
  },
  /**
   * Writes a version's change file (./change-feed.ts) to `target`, Parquet (zstd), and reads back
   * what it holds: the counts of each change type and a profile (columns, rows, first rows) for the
   * preview. It runs in bounded memory (the join and EXCEPT ALL spill to the task's directory).
   */
  async changeFile(
    connection: DuckDBConnection,
    input: Omit<ChangeFileInput, "columns"> & { columnNames: string[]; target: string },
  ): Promise<{ counts: Record<ChangeType, number>; profile: Profile }> {
    const described = await connection.runAndReadAll(
      `DESCRIBE SELECT * FROM read_parquet([${input.current.map(sqlString).join(", ")}])`,
    );
    const types = new Map(
      described.getRowObjectsJson().map((row) => [String(row.column_name), String(row.column_type)]),
    );
    const columns = input.columnNames.map((name) => ({ name, type: types.get(name) ?? "VARCHAR" }));
    await connection.run(
      `COPY (${changeFileQuery({ ...input, columns })}) TO ${sqlString(input.target)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    const counted = await connection.runAndReadAll(
      `SELECT ${CHANGE_TYPE_COLUMN}, count(*) FROM read_parquet(${sqlString(input.target)}) GROUP BY ALL`,
    );
    const counts = Object.fromEntries(CHANGE_TYPES.map((type) => [type, 0])) as Record<ChangeType, number>;
    for (const [type, count] of counted.getRowsJson()) counts[type as ChangeType] = Number(count);
    const profile = await ENGINE_TASKS.profile(connection, {
      file: input.target,
      format: "parquet",
      compression: null,
    });
    return { counts, profile };
  },

  /** A publication's figures for its quality report (./quality-figures.ts), over its parts only. */
  async qualityFigures(
    connection: DuckDBConnection,
    input: { parts: string[]; previous: VersionFigures | null },
  ): Promise<QualityFigures> {
    return measureQuality(connection, input);
  },
  ...QUERY_TASKS,
};

export type EngineTasks = typeof ENGINE_TASKS;

/** A key check's finding: the first part with a null key, or the first key found twice. */
export type KeyCheck = { nullKeyIn?: string; duplicate?: { values: string[]; count: number } };
export type EngineTaskName = keyof EngineTasks;
export type EngineTaskInput<Name extends EngineTaskName> = Parameters<EngineTasks[Name]>[1];
export type EngineTaskOutput<Name extends EngineTaskName> = Awaited<ReturnType<EngineTasks[Name]>>;

/** A file's reader once it passed the checks of its format (looks like it; a gzip that does not expand without bound). */
async function checkedReader(connection: DuckDBConnection, file: string, source: Source): Promise<string> {
  // An empty JSON Lines part of a table is a part without a record: it takes the table's columns.
  const emptyAllowed = source.format === "jsonl" && source.emptyTypes !== undefined && source.emptyTypes.length > 0;
  await checkLooksLike(file, source.format, source.compression, { emptyAllowed });
  if (source.compression === "gzip") await checkGzipExpansion(file);
  return readerOf(connection, file, source);
}

/** The columns DuckDB reads from `reader`: name, type, and whether its schema allows nulls. */
async function columnsOf(connection: DuckDBConnection, reader: string): Promise<Column[]> {
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${reader}`);
  const columns = described.getRowObjectsJson().map((row) => ({
    name: String(row.column_name),
    type: String(row.column_type),
    nullable: row.null !== "NO",
  }));
  if (columns.length === 0) throw new UnreadableFileError("The file has no columns.");
  return columns;
}

/** `base`, or `base_2`, `base_3`...: the first name no column of `reader` has (DuckDB compares names without case). */
async function unusedColumnName(connection: DuckDBConnection, reader: string, base: string): Promise<string> {
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${reader}`);
  const taken = new Set(described.getRowObjectsJson().map((row) => String(row.column_name).toLowerCase()));
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
  return name;
}

/** The first PREVIEW_ROWS rows of `reader`, as the preview stores them. */
async function previewOf(connection: DuckDBConnection, reader: string, columns: Column[]): Promise<Json[][]> {
  const first = await connection.runAndReadAll(`SELECT * FROM ${reader} LIMIT ${PREVIEW_ROWS}`);
  return withinPreviewSize(
    previewRows(
      first.getRowsJson() as Json[][],
      columns.map(({ type }) => type),
    ),
  );
}

/** Each column's null count in a Parquet file written here, from its footer's statistics (none: 1, unknown). */
async function parquetNullCounts(connection: DuckDBConnection, file: string): Promise<Record<string, number>> {
  const result = await connection.runAndReadAll(
    `SELECT path_in_schema, sum(stats_null_count) FROM parquet_metadata(${sqlString(file)}) GROUP BY path_in_schema`,
  );
  return Object.fromEntries(result.getRowsJson().map(([column, nulls]) => [String(column), Number(nulls ?? 1)]));
}

/**
 * The per-column statistics of a Parquet file written here, from its footer (./parquet-stats.ts):
 * its columns as DuckDB reads them back, then one statement over parquet_metadata().
 */
async function parquetColumnStats(connection: DuckDBConnection, file: string): Promise<ColumnStats> {
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlString(file)})`);
  const columns = described
    .getRowObjectsJson()
    .map((row) => ({ name: String(row.column_name), type: String(row.column_type) }));
  const query = columnStatsQuery(file, columns);
  if (!query) return { minValues: {}, maxValues: {}, nullCount: {} };
  const rows = (await connection.runAndReadAll(query)).getRowObjectsJson() as ColumnStatsRow[];
  return columnStatsFrom(columns, rows);
}

/** DuckDB's COPY options for each rendition: Parquet compressed with zstd; CSV with a header row; JSON one object per line. */
const COPY_OPTIONS: Record<RenditionFormat, string> = {
  parquet: "FORMAT parquet, COMPRESSION zstd",
  csv: "FORMAT csv, HEADER true",
  jsonl: "FORMAT json",
};

/** Every column as it is, but text columns' formulas made inert (lib/csv-formulas.ts). */
function formulaSafeSelectList(columns: Column[]): string {
  return columns
    .map(({ name, type }) => {
      const column = sqlIdentifier(name);
      return type === "VARCHAR" ? `${formulaSafeSql(column)} AS ${column}` : column;
    })
    .join(", ");
}

/**
 * The reader of a file. A CSV or TSV is sniffed once, with no lines skipped before the header, and read
 * with what the sniffer found written out (`auto_detect = false`), so the statements of a task (its
 * columns, its rows, its first rows) do not sniff it again each: deterministic, so profile and
 * renditions agree. A `.csv` keeps the sniffer's separator when it is one of CSV_DELIMITERS and splits
 * the file into columns, else it is read with commas (rows of different lengths whatever the separator:
 * the sniffer then settles for one column of whole lines), and the strict read refuses it as before.
 */
async function readerOf(connection: DuckDBConnection, file: string, source: Source): Promise<string> {
  if (source.format === "jsonl" && source.emptyTypes?.length) {
    const typed = await recordlessJsonLines(connection, file, source.compression, source.emptyTypes);
    if (typed) return typed;
  }
  if (source.format !== "csv" && source.format !== "tsv") return readerSql(file, source.format, source.compression);
  const sniffed = await sniffCsv(connection, file, source);
  if (!sniffed) return readerSql(file, source.format, source.compression);
  const csvReader = (columns: SniffedCsv["Columns"]) => {
    const text = (value: string) => sqlString(value === "(empty)" ? "" : value);
    const options = [
      "auto_detect = false",
      `delim = ${text(sniffed.Delimiter)}`,
      `quote = ${text(sniffed.Quote)}`,
      `escape = ${text(sniffed.Escape)}`,
      `new_line = ${text(sniffed.NewLineDelimiter)}`,
      `comment = ${text(sniffed.Comment)}`,
      "skip = 0",
      `header = ${sniffed.HasHeader ? "true" : "false"}`,
      `columns = {${columns.map(({ name, type }) => `${sqlString(name)}: ${sqlString(type)}`).join(", ")}}`,
      ...(sniffed.DateFormat ? [`dateformat = ${sqlString(sniffed.DateFormat)}`] : []),
      ...(sniffed.TimestampFormat ? [`timestampformat = ${sqlString(sniffed.TimestampFormat)}`] : []),
      `compression = ${source.compression === "gzip" ? "'gzip'" : "'none'"}`,
    ];
    return `read_csv(${sqlString(file)}, ${options.join(", ")})`;
  };
  const sniffedReader = csvReader(sniffed.Columns);
  const typed = source.emptyTypes && (await headerOnlyTypes(connection, sniffedReader, sniffed, source.emptyTypes));
  return typed ? csvReader(typed) : sniffedReader;
}

/** Types a CSV column may be declared as without a value to read: plain ones and DECIMAL(p,s), not nested ones. */
const DECLARABLE_TYPE = /^(?:[A-Z][A-Z0-9_ ]*|DECIMAL\(\d+,\s*\d+\))$/;

/**
 * The columns of a header-only CSV or TSV with the types `emptyTypes` gives their names. With no
 * row the sniffer has no evidence and calls every column VARCHAR, so an empty refresh of a typed
 * table would fail as a change of type; it is a 0-row version of the same columns, which the quality
 * gate holds (row_count_zero). Undefined when the file has a row, or a sniffed type other than VARCHAR.
 */
async function headerOnlyTypes(
  connection: DuckDBConnection,
  reader: string,
  sniffed: SniffedCsv,
  emptyTypes: Column[],
): Promise<SniffedCsv["Columns"] | undefined> {
  if (!sniffed.HasHeader || sniffed.Columns.some((column) => column.type !== "VARCHAR")) return undefined;
  const known = new Map(
    emptyTypes.filter((column) => DECLARABLE_TYPE.test(column.type)).map((column) => [column.name, column.type]),
  );
  if (!sniffed.Columns.some((column) => (known.get(column.name) ?? "VARCHAR") !== "VARCHAR")) return undefined;
  const first = await connection.runAndReadAll(`SELECT 1 FROM ${reader} LIMIT 1`);
  if (first.getRows().length > 0) return undefined;
  return sniffed.Columns.map((column) => ({ name: column.name, type: known.get(column.name) ?? column.type }));
}

/**
 * A JSON Lines file without a record (empty, or blank lines) read as the table's columns: DuckDB
 * reads it as one column `json`, a change of columns; like a header-only CSV it is a 0-row version
 * the quality gate holds (row_count_zero). Undefined when it has a record (this reads one).
 */
async function recordlessJsonLines(
  connection: DuckDBConnection,
  file: string,
  compression: Compression,
  emptyTypes: Column[],
): Promise<string | undefined> {
  const columns = emptyTypes.map(({ name, type }) => `${sqlString(name)}: ${sqlString(type)}`).join(", ");
  const reader = `read_json(${sqlString(file)}, format = 'newline_delimited', compression = ${
    compression === "gzip" ? "'gzip'" : "'uncompressed'"
  }, columns = {${columns}})`;
  try {
    const first = await connection.runAndReadAll(`SELECT 1 FROM ${reader} LIMIT 1`);
    return first.getRows().length === 0 ? reader : undefined;
  } catch {
    return undefined;
  }
}

type SniffedCsv = {
  Delimiter: string;
  Quote: string;
  Escape: string;
  NewLineDelimiter: string;
  Comment: string;
  HasHeader: boolean;
  Columns: { name: string; type: string }[];
  DateFormat: string | null;
  TimestampFormat: string | null;
};

/** DuckDB's sniffer's findings on a CSV or TSV, or undefined where its separator is not taken (see readerOf). */
async function sniffCsv(connection: DuckDBConnection, file: string, source: Source): Promise<SniffedCsv | undefined> {
  const compression = source.compression === "gzip" ? "'gzip'" : "'none'";
  const delimiter = source.format === "tsv" ? `, delim = ${sqlString("\t")}` : "";
  let sniffed: SniffedCsv | undefined;
  try {
    const result = await connection.runAndReadAll(
      `SELECT Delimiter, Quote, Escape, NewLineDelimiter, Comment, HasHeader, Columns, DateFormat, TimestampFormat
       FROM sniff_csv(${sqlString(file)}, skip = 0, compression = ${compression}${delimiter})`,
    );
    sniffed = result.getRowObjectsJson()[0] as SniffedCsv | undefined;
  } catch {
    return undefined;
  }
  if (!sniffed || !Array.isArray(sniffed.Columns) || sniffed.Columns.length === 0) return undefined;
  if (source.format === "csv") {
    const taken = CSV_DELIMITERS.some((candidate) => candidate === sniffed.Delimiter);
    if (!taken || sniffed.Columns.length < 2) return undefined;
  }
  return sniffed;
}
