import type { DuckDBConnection } from "@duckdb/node-api";
import { AppError, type ErrorCode } from "../errors";
import { SPILL_LIMIT, sqlIdentifier, sqlString } from "./engine";
import { previewRows, type Json } from "./preview-values";
import { checkSelect } from "./sql-check";
import { renderFilter, WHERE_PARSE_PREFIX } from "./where-filter";

/**
 * Buyers' queries (contract Part 7), run in an engine process of the query pool
 * (./engine-pool.ts runQueryTask) in a DuckDB instance confined to the order's files and
 * interrupted past its time (./engine-tasks.ts withTaskEngine). The buyer's text is parsed by
 * DuckDB's parser here and checked (./where-filter.ts, ./sql-check.ts); what runs is rendered from
 * the checked tree. A refusal is an AppError with the contract's code; DuckDB's own message has the
 * order's file paths replaced by their names.
 */

export type QueryColumn = { name: string; type: string };
/** A readable file of the order and the name the buyer knows it by (messages show the name, never the path). */
export type QueryFile = { path: string; name: string };

export type RowsInput = {
  files: QueryFile[];
  /** The version's columns, in order. */
  columns: string[];
  select: string[];
  where?: string;
  /** Sort columns, then the key, then file order: a total order, so pages neither overlap nor skip. */
  orderBy: { column: string; descending: boolean }[];
  limit: number;
  offset: number;
};
export type RowsOutput = { columns: QueryColumn[]; rows: Json[][]; more: boolean };

/** A view the SQL reads: a version's parts, or (changes) each version's change file with its number. */
export type SqlView = { name: string; files: QueryFile[]; changes?: { version: number; file: QueryFile }[] };
export type SqlOutput = { columns: QueryColumn[]; rows: Json[][]; truncated: boolean };

/** Names DuckDB adds to a part's rows for the file order (the part, the row's position in it). */
const PART_COLUMN = "__part_file";
const ROW_COLUMN = "file_row_number";

export const QUERY_TASKS = {
  /** A page of a version's rows: the columns asked, the filter checked and rendered, a total order. */
  async tableRows(connection: DuckDBConnection, input: RowsInput): Promise<RowsOutput> {
    return explained(input.files, "invalid_filter", async () => {
      const filter =
        input.where === undefined ? "" : `WHERE ${await parsedFilter(connection, input.where, input.columns)}`;
      const paths = `[${input.files.map((file) => sqlString(file.path)).join(", ")}]`;
      // File order is the parts' order as given (version, then name), not their stored paths' order (random ids).
      const order = [
        ...input.orderBy.map(({ column, descending }) => `${sqlIdentifier(column)} ${descending ? "DESC" : "ASC"}`),
        `list_position(${paths}, ${sqlIdentifier(PART_COLUMN)})`,
        sqlIdentifier(ROW_COLUMN),
      ];
      const reader = `read_parquet(${paths}, filename = ${sqlString(PART_COLUMN)}, file_row_number = true)`;
      const result = await connection.runAndReadAll(
        `SELECT ${input.select.map(sqlIdentifier).join(", ")} FROM ${reader} ${filter}
         ORDER BY ${order.join(", ")} LIMIT ${input.limit + 1} OFFSET ${input.offset}`,
      );
      const columns = columnsOf(result);
      const rows = result.getRowsJson() as Json[][];
      return {
        columns,
        rows: previewRows(
          rows.slice(0, input.limit),
          columns.map(({ type }) => type),
        ),
        more: rows.length > input.limit,
      };
    });
  },

  /** The tables a query reads (its checked parse), so the server can make their files readable. */
  async sqlTables(connection: DuckDBConnection, input: { sql: string }): Promise<{ tables: string[] }> {
    const { tables } = checkSelect(await serialized(connection, input.sql), input.sql);
    return { tables };
  },

  /** The query, checked again, over views of the order's tables; at most `limit` rows, streamed. */
  async orderSql(
    connection: DuckDBConnection,
    input: { sql: string; views: SqlView[]; limit: number },
  ): Promise<SqlOutput> {
    const files = input.views.flatMap((view) => [...view.files, ...(view.changes ?? []).map(({ file }) => file)]);
    return explained(files, "invalid_sql", async () => {
      const parsed = await serialized(connection, input.sql);
      checkSelect(parsed, input.sql);
      for (const view of input.views)
        await connection.run(`CREATE TEMP VIEW ${sqlIdentifier(view.name)} AS ${viewSql(view)}`);
      // What runs is DuckDB's rendering of the checked parse (no comment, no second statement). The
      // parse goes from serializer to deserializer inside DuckDB: through JavaScript's numbers, its
      // 64-bit fields (locations, big literals) would not survive.
      const rendered = await connection.runAndReadAll("SELECT json_deserialize_sql(json_serialize_sql($1::VARCHAR))", [
        input.sql,
      ]);
      const sql = String(rendered.getRowsJson()[0]?.[0] ?? "");
      const result = await connection.streamAndReadUntil(sql, input.limit + 1);
      const columns = columnsOf(result);
      const rows = (result.getRowsJson() as Json[][]).slice(0, input.limit + 1);
      return {
        columns,
        rows: previewRows(
          rows.slice(0, input.limit),
          columns.map(({ type }) => type),
        ),
        truncated: rows.length > input.limit,
      };
    });
  },
};

function viewSql(view: SqlView): string {
  if (!view.changes)
    return `SELECT * FROM read_parquet([${view.files.map((file) => sqlString(file.path)).join(", ")}])`;
  if (view.changes.length === 0) return "SELECT NULL AS _change_type, NULL::INTEGER AS _commit_version WHERE false";
  return view.changes
    .map(
      ({ version, file }) =>
        `SELECT *, ${version}::INTEGER AS _commit_version FROM read_parquet(${sqlString(file.path)})`,
    )
    .join(" UNION ALL BY NAME ");
}

type Reader = { columnNames(): string[]; columnTypes(): { toString(): string }[] };
const columnsOf = (result: Reader): QueryColumn[] =>
  result.columnNames().map((name, index) => ({ name, type: String(result.columnTypes()[index]) }));

/** `json_serialize_sql` of `sql`: DuckDB's parse, as JSON text (an `error` object for anything but SELECT). */
async function serialized(connection: DuckDBConnection, sql: string): Promise<string> {
  const result = await connection.runAndReadAll("SELECT json_serialize_sql($1::VARCHAR)", [sql]);
  return String(result.getRowsJson()[0]?.[0] ?? "");
}

/** Reference parse of the frame the filter is parsed in: the filter's parse must differ from it only by its WHERE. */
let framePlan: string | undefined;

/** The filter's SQL, rendered from DuckDB's parse of it once every node passed (./where-filter.ts). */
export async function parsedFilter(connection: DuckDBConnection, where: string, columns: string[]): Promise<string> {
  const parsed = JSON.parse(await serialized(connection, WHERE_PARSE_PREFIX + where)) as {
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
    (JSON.parse(await serialized(connection, "SELECT * FROM t")) as typeof parsed).statements![0]!.node,
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
 * `work`, with DuckDB's failures as the buyer's errors: interrupted (past the time limit) as
 * query_timeout, memory or spill exhausted as query_timeout too (a narrower query needs less), any
 * other as `code` with DuckDB's first line, the order's file paths shown as their names.
 */
async function explained<T>(files: QueryFile[], code: ErrorCode, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (/^INTERRUPT Error/.test(message)) {
      throw new AppError(
        "query_timeout",
        "The query needed more than 10 seconds of engine time: narrow it (a filter, fewer columns, a smaller limit).",
      );
    }
    if (/^Out of Memory Error/.test(message) || SPILL_LIMIT.test(message)) {
      throw new AppError(
        "query_timeout",
        "The query needed more memory and temporary disk than a query may use: narrow it (a filter, fewer columns, a smaller limit).",
      );
    }
    let line = message.split("\n")[0]!.replace(/^[\w ]+ Error: /, "");
    for (const file of [...files].sort((a, b) => b.path.length - a.path.length))
      line = line.replaceAll(file.path, file.name);
    throw new AppError(code, `${code === "invalid_sql" ? "q" : "where"}: ${line.slice(0, 500)}`);
  }
}
