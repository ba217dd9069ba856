import type { DuckDBConnection } from "@duckdb/node-api";
import { formulaSafeSql } from "../csv-formulas";
import type { RenditionFormat } from "../data-formats";
import { AppError, type ErrorCode } from "../errors";
import { SPILL_LIMIT, sqlIdentifier, sqlString } from "./engine";
import { answerRows, type AnswerRows } from "./answer-rows";
import { checkedRendering } from "./plan-check";
import { ownTypeReplacements } from "./spark-schema";
import { checkSelect } from "./sql-check";
import { serializedSql } from "./sql-parser";
import { renderFilter, WHERE_PARSE_PREFIX } from "./where-filter";

/**
 * Buyers' queries (contract Part 7), run in an engine process of the query pool
 * (./query-pool.ts runQueryTask) in a DuckDB instance confined to the order's files and
 * interrupted past its time (./task-engine.ts openTaskEngine). The buyer's text is parsed by
 * DuckDB's parser here and checked (./where-filter.ts, ./sql-check.ts); what runs is rendered from
 * the checked tree. A refusal is an AppError with the contract's code; DuckDB's own message has the
 * order's file paths replaced by their names.
 */

export type QueryColumn = { name: string; type: string };
/** A readable file of the order and the name the buyer knows it by (messages show the name, never the path). */
export type QueryFile = { path: string; name: string };

/** A version's rows without paging: a subset's (all matching rows, in the rows' total order). */
export type SubsetRowsInput = {
  files: QueryFile[];
  /** The version's columns, in order, in the table's own types (its parts store some widened). */
  columns: QueryColumn[];
  select: string[];
  where?: string;
  orderBy: { column: string; descending: boolean }[];
  /** Whether the parts' file order must follow `orderBy` to make the order total (no unique key in it). */
  fileOrder: boolean;
};
/**
 * A page of them: with the key and file order after the sort, pages neither overlap nor skip. At
 * most `limit` rows and `bytes` of answer.
 */
export type RowsInput = SubsetRowsInput & { limit: number; offset: number; bytes: number };

/**
 * A view the SQL reads: a version's parts, or (changes) each version's change file with its number;
 * each with the version's columns in the table's own types, which the view reads them as.
 */
export type SqlView = {
  name: string;
  files: QueryFile[];
  columns: QueryColumn[];
  changes?: { version: number; file: QueryFile; columns: QueryColumn[] }[];
};

/**
 * DuckDB's virtual columns of a Parquet scan that make the file order: the part's place in the list
 * given (version, then name; not the stored paths' order, random ids) and the row's position in it.
 */
const FILE_ORDER_COLUMNS = ["file_index", "file_row_number"];

export const QUERY_TASKS = {
  /** A page of a version's rows: the columns asked, the filter checked and rendered, a total order. */
  async tableRows(connection: DuckDBConnection, input: RowsInput): Promise<AnswerRows> {
    return explained(input.files, "invalid_filter", async () => {
      const result = await connection.stream(
        `${await orderedRowsSql(connection, input)} LIMIT ${input.limit + 1} OFFSET ${input.offset}`,
      );
      return answerRows(result, input);
    });
  },

  /**
   * Whether a subset's query binds (its filter checked, its types agreeing) without reading a row:
   * what the subset request refuses at once, before a job is queued.
   */
  async subsetCheck(connection: DuckDBConnection, input: SubsetRowsInput): Promise<{ columns: QueryColumn[] }> {
    return explained(input.files, "invalid_filter", async () => {
      const result = await connection.runAndReadAll(`${await orderedRowsSql(connection, input)} LIMIT 0`);
      return { columns: columnsOf(result) };
    });
  },

  /**
   * Every matching row of a version in the rows' total order, written into `target` (in the task's
   * own directory) as Parquet (zstd), CSV (a header, text formulas made inert as in the CSV
   * renditions) or JSON Lines. Answers the rows written.
   */
  async tableSubset(
    connection: DuckDBConnection,
    input: SubsetRowsInput & { format: RenditionFormat; target: string },
  ): Promise<{ rows: number }> {
    return explained(input.files, "invalid_filter", async () => {
      const rows = await orderedRowsSql(connection, input);
      const types = columnsOf(await connection.runAndReadAll(`${rows} LIMIT 0`));
      const select = types.map(({ name, type }) =>
        input.format === "csv" && type === "VARCHAR"
          ? `${formulaSafeSql(sqlIdentifier(name))} AS ${sqlIdentifier(name)}`
          : sqlIdentifier(name),
      );
      // The inner query keeps the total order; COPY keeps its rows' order (preserve_insertion_order).
      const written = await connection.runAndReadAll(
        `COPY (SELECT ${select.join(", ")} FROM (${rows})) TO ${sqlString(input.target)} (${SUBSET_COPY_OPTIONS[input.format]})`,
      );
      return { rows: Number(written.getRowsJson()[0]?.[0] ?? 0) };
    });
  },

  /** The tables a query reads (its checked parse), so the server can make their files readable (QUERY_PARSE_ONLY). */
  async sqlTables(_connection: DuckDBConnection | undefined, input: { sql: string }): Promise<{ tables: string[] }> {
    return { tables: await checkedTables(input.sql) };
  },

  /**
   * The query, checked again, over views of the order's tables; at most `limit` rows and `bytes` of
   * answer, streamed.
   * `views` may hold more than it reads (./sql.ts guesses them): only the named ones are made and
   * readable (QUERY_READABLE); a name the views lack is answered `unresolved`, nothing run.
   */
  async orderSql(connection: DuckDBConnection, input: SqlInput & { bytes: number }): Promise<AnswerRows | Unresolved> {
    const views = namedViews(await checkedTables(input.sql), input.views);
    if ("unresolved" in views) return views;
    return explained(viewFiles(views), "invalid_sql", async () =>
      answerRows(await connection.stream(await sqlOverViews(connection, input.sql, views)), input),
    );
  },

  /**
   * The query's first rows written by DuckDB as Parquet (zstd) into `target`, in the task's own
   * directory: the Query page's result as a file, with the columns' own types. As many rows as
   * orderSql would answer (`limit`, `bytes` of JSON). Views as orderSql's.
   */
  async orderSqlParquet(
    connection: DuckDBConnection,
    input: SqlInput & { bytes: number; target: string },
  ): Promise<{ truncated: boolean } | Unresolved> {
    const views = namedViews(await checkedTables(input.sql), input.views);
    if ("unresolved" in views) return views;
    return explained(viewFiles(views), "invalid_sql", async () => {
      const sql = await sqlOverViews(connection, input.sql, views);
      // One run of the query, kept in memory (at most limit + 1 rows) in the order it answered.
      await connection.run(`CREATE TEMP TABLE ${RESULT_TABLE} AS SELECT * FROM (${sql}) LIMIT ${input.limit + 1}`);
      const fitting = await answerRows(await connection.stream(`SELECT * FROM ${RESULT_TABLE}`), input);
      await connection.run(
        `COPY (SELECT * FROM ${RESULT_TABLE} LIMIT ${fitting.rowCount}) TO ${sqlString(input.target)} (${SUBSET_COPY_OPTIONS.parquet})`,
      );
      return { truncated: fitting.cut !== undefined };
    });
  },
};

/**
 * What a task may read, decided on its text's parse (./sql-parser.ts) before its instance is chosen
 * and locked (./task-engine.ts openTaskEngine), within the files the server handed over: a SQL
 * query's views' files, only those of the views it names (its checked parse).
 */
export const QUERY_READABLE: Record<string, (input: never) => Promise<string[]>> = {
  orderSql: readableOfNamedViews,
  orderSqlParquet: readableOfNamedViews,
};

/**
 * The query tasks that may run on an instance kept between queries of the same files
 * (./kept-engine.ts): they write nothing into their task's directory and leave nothing beyond
 * their connection (orderSql's views are TEMP, ended with it). tableSubset and orderSqlParquet write
 * their file into the task's directory: an instance of their own, always.
 */
export const QUERY_KEPT: ReadonlySet<string> = new Set(["tableRows", "subsetCheck", "orderSql"]);

/** The tasks answered from their text's parse alone: no instance is made for them (./task-runner.ts). */
export const QUERY_PARSE_ONLY: ReadonlySet<string> = new Set(["sqlTables"]);

async function readableOfNamedViews(input: SqlInput): Promise<string[]> {
  const named = namedViews(await checkedTables(input.sql), input.views);
  return "unresolved" in named ? [] : viewFiles(named).map((file) => file.path);
}

/** Views a query names that the server did not hand over: it resolves them and runs the query again. */
export type Unresolved = { unresolved: string[] };

/** The views `tables` (the query's names) name, each made under the query's spelling, or the names not given. */
function namedViews(tables: string[], views: SqlView[]): SqlView[] | Unresolved {
  // DuckDB's names ignore case: "Products" and products are one view.
  const distinct = [...new Map(tables.map((name) => [name.toLowerCase(), name])).values()];
  const given = new Map(views.map((view) => [view.name.toLowerCase(), view]));
  const unresolved = distinct.filter((name) => !given.has(name.toLowerCase()));
  if (unresolved.length > 0) return { unresolved };
  return distinct.map((name) => ({ ...given.get(name.toLowerCase())!, name }));
}

type SqlInput = { sql: string; views: SqlView[]; limit: number };
/** A name no view of the order can take (table names are lower-case letters, digits and `_`, starting with a letter). */
const RESULT_TABLE = '"__query result"';

const viewFiles = (views: SqlView[]) =>
  views.flatMap((view) => [...view.files, ...(view.changes ?? []).map(({ file }) => file)]);

/** The tables the query reads, once its parse is checked (./sql-check.ts). */
async function checkedTables(sql: string): Promise<string[]> {
  return checkSelect(await serializedSql(sql), sql).tables;
}

/**
 * The checked query with its views made, as what runs: DuckDB's rendering of its parse (no
 * comment, no second statement), once its bound plan reads only the views (./plan-check.ts).
 */
async function sqlOverViews(connection: DuckDBConnection, sql: string, views: SqlView[]): Promise<string> {
  for (const view of views) await connection.run(`CREATE TEMP VIEW ${sqlIdentifier(view.name)} AS ${viewSql(view)}`);
  return checkedRendering(connection, {
    sql,
    viewNames: views.map((view) => view.name),
    readable: views.flatMap(viewReads),
  });
}

/** The file lists a view's scans read, as viewSql makes them: its parts, or each change file alone. */
const viewReads = (view: SqlView): string[][] =>
  view.changes ? view.changes.map(({ file }) => [file.path]) : [view.files.map((file) => file.path)];

const SUBSET_COPY_OPTIONS: Record<RenditionFormat, string> = {
  parquet: "FORMAT parquet, COMPRESSION zstd",
  csv: "FORMAT csv, HEADER true",
  jsonl: "FORMAT json",
};

/**
 * The SELECT of a version's rows: the asked columns, the checked filter, ordered by the asked sort
 * and the key, then (`fileOrder`) the parts' order as given (version, then name, not their stored
 * paths' random ids) and each row's position in its part: a total order.
 */
async function orderedRowsSql(connection: DuckDBConnection, input: SubsetRowsInput): Promise<string> {
  const names = input.columns.map((column) => column.name);
  const filter = input.where === undefined ? "" : `WHERE ${await parsedFilter(input.where, names)}`;
  const { source, fileOrder } = input.fileOrder
    ? await fileOrderedSource(connection, input.files, input.columns)
    : { source: ownTypedParts(input.files, input.columns), fileOrder: [] };
  const order = [
    ...input.orderBy.map(({ column, descending }) => `${sqlIdentifier(column)} ${descending ? "DESC" : "ASC"}`),
    ...fileOrder.map(sqlIdentifier),
  ];
  return `SELECT ${input.select.map(sqlIdentifier).join(", ")} FROM ${source} ${filter} ORDER BY ${order.join(", ")}`;
}

/**
 * The parts' rows and the columns that sort them in file order. A table with a column of its own
 * named like DuckDB's virtual ones hides them (any case: DuckDB's names ignore it); its rows are then
 * numbered by their position in one scan of every part in turn (a positional join keeps that
 * order), which reads every row, where the virtual columns let DuckDB skip what the filter excludes.
 */
async function fileOrderedSource(
  connection: DuckDBConnection,
  files: QueryFile[],
  columns: QueryColumn[],
): Promise<{ source: string; fileOrder: string[] }> {
  const taken = new Set(columns.map(({ name }) => name.toLowerCase()));
  if (!FILE_ORDER_COLUMNS.some((name) => taken.has(name)))
    return { source: ownTypedParts(files, columns, FILE_ORDER_COLUMNS), fileOrder: FILE_ORDER_COLUMNS };
  const reader = ownTypedParts(files, columns);
  let position = "row_position";
  while (taken.has(position)) position = `_${position}`;
  const counted = await connection.runAndReadAll(`SELECT count(*) FROM ${reader}`);
  const rows = Number(counted.getRowsJson()[0]?.[0] ?? 0);
  return {
    source: `${reader} POSITIONAL JOIN range(${rows}) AS positions(${sqlIdentifier(position)})`,
    fileOrder: [position],
  };
}

/**
 * The rows of Parquet `files` with `columns` in the table's own types: read as they are where the
 * parts store every column so (no cast in the way of the scan), else with the widened ones cast
 * back (lib/engine/spark-schema.ts ownTypeReplacements), and DuckDB's `virtual` columns kept.
 */
function ownTypedParts(files: QueryFile[], columns: QueryColumn[], virtual: string[] = []): string {
  const reader = `read_parquet([${files.map((file) => sqlString(file.path)).join(", ")}])`;
  const casts = ownTypeReplacements(columns);
  if (casts === undefined) return reader;
  return `(SELECT ${[`* REPLACE (${casts})`, ...virtual].join(", ")} FROM ${reader})`;
}

/** `* REPLACE (...)` casting the widened ones of `columns` back, or `*` when none is. */
function ownTypesSelect(columns: QueryColumn[]): string {
  const casts = ownTypeReplacements(columns);
  return casts === undefined ? "*" : `* REPLACE (${casts})`;
}

function viewSql(view: SqlView): string {
  if (!view.changes)
    return `SELECT ${ownTypesSelect(view.columns)} FROM read_parquet([${view.files.map((file) => sqlString(file.path)).join(", ")}])`;
  if (view.changes.length === 0) return "SELECT NULL AS _change_type, NULL::INTEGER AS _commit_version WHERE false";
  return view.changes
    .map(
      ({ version, file, columns }) =>
        `SELECT ${ownTypesSelect(columns)}, ${version}::INTEGER AS _commit_version FROM read_parquet(${sqlString(file.path)})`,
    )
    .join(" UNION ALL BY NAME ");
}

type Reader = { columnNames(): string[]; columnTypes(): { toString(): string }[] };
/** The result's columns; its types read once (each columnTypes() call makes all of them). */
function columnsOf(result: Reader): QueryColumn[] {
  const types = result.columnTypes();
  return result.columnNames().map((name, index) => ({ name, type: String(types[index]) }));
}

/** Reference parse of the frame the filter is parsed in: the filter's parse must differ from it only by its WHERE. */
let framePlan: string | undefined;

/** The filter's SQL, rendered from DuckDB's parse of it once every node passed (./where-filter.ts). */
export async function parsedFilter(where: string, columns: string[]): Promise<string> {
  const parsed = JSON.parse(await serializedSql(WHERE_PARSE_PREFIX + where)) as {
    error?: boolean;
    error_message?: string;
    position?: string;
    statements?: { node: Record<string, unknown> }[];
  };
  if (parsed.error) {
    const at = Number(parsed.position) - WHERE_PARSE_PREFIX.length;
    const token =
      Number.isInteger(at) && at >= 0 ? ` at character ${at + 1} (${JSON.stringify(where.slice(at, at + 20))})` : "";
    throw new AppError("invalid_filter", `where: ${parsed.error_message ?? "it does not parse"}${token}.`);
  }
  const node = parsed.statements?.length === 1 ? parsed.statements[0]!.node : undefined;
  framePlan ??= JSON.stringify(
    (JSON.parse(await serializedSql("SELECT * FROM t")) as typeof parsed).statements![0]!.node,
  );
  if (!node || JSON.stringify({ ...node, where_clause: null }) !== framePlan) {
    throw new AppError(
      "invalid_filter",
      "where: it must be one boolean expression; GROUP BY, ORDER BY, LIMIT, UNION and other clauses are not allowed.",
    );
  }
  return renderFilter(node.where_clause, where, columns);
}

/**
 * `work`, with DuckDB's failures as the buyer's errors (past the time limit is query_timeout, said
 * by ./task-engine.ts runInTime): memory or spill exhausted as query_timeout too (a narrower query needs less), any
 * other as `code` with DuckDB's first line, the order's file paths shown as their names.
 */
async function explained<T>(files: QueryFile[], code: ErrorCode, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (/^Out of Memory Error/.test(message) || SPILL_LIMIT.test(message)) {
      throw new AppError(
        "query_timeout",
        "The query needed more memory and temporary disk than a query may use: narrow it (a filter, fewer columns, a smaller limit).",
      );
    }
    let line = message.split("\n")[0]!.replace(/^[\w ]+ Error: /, "");
    for (const file of [...files].sort((a, b) => b.path.length - a.path.length))
      line = line.replaceAll(file.path, file.name);
    throw new AppError(code, code === "invalid_sql" ? line.slice(0, 500) : `where: ${line.slice(0, 500)}`);
  }
}
