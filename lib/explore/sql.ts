import { promises as fs } from "node:fs";
import path from "node:path";
import { withTempDir } from "../engine/engine";
import type { AnswerColumn } from "../engine/answer-rows";
import type { QueryVia } from "../engine/engine-pool";
import type { QueryFile, SqlView, Unresolved } from "../engine/query-tasks";
import { parenthesisDepth, WHERE_MAX_DEPTH } from "../engine/where-filter";
import { AppError } from "../errors";
import { countEngineQuery } from "../metrics";
import { SQL_MAX_LENGTH } from "../schemas/explore-limits";
import { versionNotFound } from "../tables/queries";
import { answerJson, queryAnswerMaxBytes } from "./answer-json";
import { runBuyerQuery, runBuyerQueryIn } from "./engine-run";
import { changeFiles, deliveredOrderTables, keptVersion, versionFiles, type OrderTable } from "./files";
import { withCachedCopies } from "./query-cache";

/**
 * `GET /orders/{id}/sql` (contract Part 7): one read-only SELECT over views of the order's tables:
 * `name` (its current version), `"name@N"` (version N) and `"name@changes"` (every kept version's
 * change rows, with `_change_type` and `_commit_version`). The query is parsed and checked in the
 * engine (lib/engine/sql-check.ts), which says which views it reads; only their files are made
 * readable, and the query runs checked again over them, in one engine task where it can be. The
 * answer is at most `limit` rows and the answer budget's bytes (./answer-json.ts); `truncated_reason`
 * says which cut it.
 */

/** An answer, its rows as the engine wrote them (JSON text). */
export type SqlAnswer = {
  columns: AnswerColumn[];
  rowsJson: string;
  rowCount: number;
  truncated: boolean;
  truncated_reason?: "rows" | "bytes";
};

type SqlRequest = {
  buyerId: string;
  orderId: string;
  sql: string;
  limit: number;
  via: QueryVia;
  /** The answer's budget in bytes, if not the API's. */
  bytes?: number;
};

export async function runOrderSql(input: SqlRequest): Promise<SqlAnswer> {
  const bytes = input.bytes ?? queryAnswerMaxBytes();
  const { columns, rowsJson, rowCount, cut } = await withCachedCopies(() =>
    withViewsOf(input, (views, files) =>
      runBuyerQuery(callerOf(input), "orderSql", { sql: input.sql, views, limit: input.limit, bytes }, files),
    ),
  );
  if (cut) countEngineQuery(input.via.door, cut === "rows" ? "truncated_rows" : "truncated_bytes");
  return { columns, rowsJson, rowCount, truncated: cut !== undefined, ...(cut ? { truncated_reason: cut } : {}) };
}

/** The answer as the API gives it. */
export const sqlAnswerJson = ({ columns, rowsJson, truncated, truncated_reason }: SqlAnswer): string =>
  answerJson({ columns }, rowsJson, { truncated, ...(truncated_reason ? { truncated_reason } : {}) });

const callerOf = (input: SqlRequest) => ({ ...input.via, account: input.buyerId });

/**
 * The query's first `limit` rows as a Parquet file written by DuckDB in the engine (the Query page's
 * download), with the same checks; `truncated` says more rows exist.
 */
export function orderSqlParquet(input: SqlRequest): Promise<{ body: Buffer; truncated: boolean }> {
  return withCachedCopies(() =>
    withTempDir(async (directory) => {
      const target = path.join(directory, "result.parquet");
      const { truncated } = await withViewsOf(input, (views, files) =>
        runBuyerQueryIn(
          directory,
          callerOf(input),
          "orderSqlParquet",
          { sql: input.sql, views, limit: input.limit, bytes: input.bytes ?? queryAnswerMaxBytes(), target },
          files,
        ),
      );
      return { body: await fs.readFile(target), truncated };
    }),
  );
}

/**
 * `run` over the views the query reads, in one engine task when it can: handed the current version
 * of every table the text mentions, the engine makes readable only those its parse names
 * (lib/engine/query-tasks.ts QUERY_READABLE). A query naming anything else (`name@N`, `name@changes`,
 * a table the order lacks) costs a task more: `sqlTables` says what it reads, and those views only
 * are handed over (or the name refused).
 */
async function withViewsOf<T extends object>(
  input: SqlRequest,
  run: (views: SqlView[], files: QueryFile[]) => Promise<T | Unresolved>,
): Promise<T> {
  checkSqlText(input.sql);
  const tables = await deliveredOrderTables(input.buyerId, input.orderId);
  if (!input.sql.includes("@")) {
    const views = await currentViewsMentioned(tables, input.sql);
    const answer = await run(views, viewFiles(views));
    if (!("unresolved" in answer)) return answer;
  }
  const views = await viewsOfQuery(input, tables);
  const answer = await run(views, viewFiles(views));
  // The engine's parse named these very views: it cannot miss one.
  if ("unresolved" in answer) throw new Error(`The engine did not resolve ${answer.unresolved.join(", ")}.`);
  return answer;
}

function checkSqlText(sql: string): void {
  if (sql.trim() === "") throw new AppError("invalid_sql", "the query is empty.");
  if (sql.length > SQL_MAX_LENGTH) {
    throw new AppError("invalid_sql", `it is ${sql.length} characters long; at most ${SQL_MAX_LENGTH} are allowed.`);
  }
  if (parenthesisDepth(sql) > WHERE_MAX_DEPTH) {
    throw new AppError("invalid_sql", `parentheses nest deeper than ${WHERE_MAX_DEPTH} levels.`);
  }
}

/**
 * The current version of each table whose name the text holds as a word (any case): what a query
 * most often reads. A table whose parts cannot be handed over now is left out: if the query names
 * it, the second path says why (e.g. rendition_pending). In S3 storage a mentioned table's parts
 * are copied into the query cache even if the query does not read them (a name in a literal).
 */
async function currentViewsMentioned(tables: OrderTable[], sql: string): Promise<SqlView[]> {
  const words = new Set(sql.toLowerCase().split(/[^a-z0-9_]+/));
  const mentioned = tables.filter((table) => table.currentVersion !== null && words.has(table.name.toLowerCase()));
  const views = await Promise.all(
    mentioned.map((table) =>
      versionFiles(table, table.currentVersion!).then(
        ({ files, columns }) => ({ name: table.name, files, columns }),
        () => undefined,
      ),
    ),
  );
  return views.filter((view) => view !== undefined);
}

/** The views the query reads, each a table of the order, by the engine's parse of it. */
async function viewsOfQuery(input: SqlRequest, tables: OrderTable[]): Promise<SqlView[]> {
  const { tables: named } = await runBuyerQuery(callerOf(input), "sqlTables", { sql: input.sql }, []);
  // DuckDB's names ignore case: "Products" and products are one view.
  const distinct = [...new Map(named.map((name) => [name.toLowerCase(), name])).values()];
  return Promise.all(distinct.map((name) => viewOf(tables, name)));
}

const viewFiles = (views: SqlView[]) =>
  views.flatMap((view) => [...view.files, ...(view.changes ?? []).map(({ file }) => file)]);

const VIEW_NAME = /^(.+?)(?:@(\d{1,9}|changes))?$/i;

/** The view a query names: a table of the order, at its current version, a version, or its changes. */
async function viewOf(tables: OrderTable[], name: string): Promise<SqlView> {
  const [, tableName = name, suffix] = VIEW_NAME.exec(name) ?? [];
  const table =
    tables.find((one) => one.name === tableName) ??
    tables.find((one) => one.name.toLowerCase() === tableName.toLowerCase());
  if (!table || table.currentVersion === null) {
    const known = tables.filter((one) => one.currentVersion !== null).map((one) => one.name);
    throw new AppError(
      "invalid_sql",
      `this order has no table ${JSON.stringify(name.slice(0, 100))} (its tables: ${known.join(", ") || "none"}; "name@N" is version N, "name@changes" its changes).`,
    );
  }
  if (suffix?.toLowerCase() === "changes") return { name, files: [], columns: [], changes: await changeFiles(table) };
  const version = suffix === undefined ? table.currentVersion : Number(suffix);
  if (suffix !== undefined)
    await keptVersion(table, version).catch(() => Promise.reject(versionNotFound(table.name, version)));
  return { name, ...(await versionFiles(table, version)) };
}

/** The order's tables with their current columns (the Query page's sidebar, the MCP server). */
export async function describeOrderTables(
  buyerId: string,
  orderId: string,
): Promise<{ name: string; version: number; columns: { name: string; type: string }[] }[]> {
  const tables = await deliveredOrderTables(buyerId, orderId);
  const described = [];
  for (const table of tables) {
    if (table.currentVersion === null) continue;
    const version = await keptVersion(table, table.currentVersion);
    described.push({
      name: table.name,
      version: version.version,
      columns: version.columns.map(({ name, type }) => ({ name, type })),
    });
  }
  return described;
}
