import { promises as fs } from "node:fs";
import path from "node:path";
import { withTempDir } from "../engine/engine";
import type { QueryColumn, QueryFile, SqlView } from "../engine/query-tasks";
import type { Json } from "../engine/preview-values";
import { parenthesisDepth, WHERE_MAX_DEPTH } from "../engine/where-filter";
import { AppError } from "../errors";
import { SQL_MAX_LENGTH } from "../schemas/explore-limits";
import { versionNotFound } from "../tables/queries";
import { runBuyerQuery, runBuyerQueryIn } from "./engine-run";
import { changeFiles, deliveredOrderTables, keptVersion, versionFiles, type OrderTable } from "./files";
import { withCachedCopies } from "./query-cache";

/**
 * `GET /orders/{id}/sql` (contract Part 7): one read-only SELECT over views of the order's tables:
 * `name` (its current version), `"name@N"` (version N) and `"name@changes"` (every kept version's
 * change rows, with `_change_type` and `_commit_version`). The query is parsed and checked in the
 * engine first (lib/engine/sql-check.ts), which says which views it reads; only their files are
 * made readable, and the query runs checked again over them.
 */

export type SqlAnswer = { columns: QueryColumn[]; rows: Json[][]; truncated: boolean };

type SqlRequest = { buyerId: string; orderId: string; sql: string; limit: number };

export function runOrderSql(input: SqlRequest): Promise<SqlAnswer> {
  return withCachedCopies(async () => {
    const { views, files } = await viewsOfQuery(input);
    return runBuyerQuery(input.buyerId, "orderSql", { sql: input.sql, views, limit: input.limit }, files);
  });
}

/**
 * The query's first `limit` rows as a Parquet file written by DuckDB in the engine (the Query page's
 * download), with the same checks; `truncated` says more rows exist.
 */
export function orderSqlParquet(input: SqlRequest): Promise<{ body: Buffer; truncated: boolean }> {
  return withCachedCopies(async () => {
    const { views, files } = await viewsOfQuery(input);
    return withTempDir(async (directory) => {
      const target = path.join(directory, "result.parquet");
      const { truncated } = await runBuyerQueryIn(
        directory,
        input.buyerId,
        "orderSqlParquet",
        { sql: input.sql, views, limit: input.limit, target },
        files,
      );
      return { body: await fs.readFile(target), truncated };
    });
  });
}

/** The views the query reads, each a table of the order, and the files they may read. */
async function viewsOfQuery(input: SqlRequest): Promise<{ views: SqlView[]; files: QueryFile[] }> {
  if (input.sql.trim() === "") throw new AppError("invalid_sql", "q: the query is empty.");
  if (input.sql.length > SQL_MAX_LENGTH) {
    throw new AppError(
      "invalid_sql",
      `q: it is ${input.sql.length} characters long; at most ${SQL_MAX_LENGTH} are allowed.`,
    );
  }
  if (parenthesisDepth(input.sql) > WHERE_MAX_DEPTH) {
    throw new AppError("invalid_sql", `q: parentheses nest deeper than ${WHERE_MAX_DEPTH} levels.`);
  }
  const tables = await deliveredOrderTables(input.buyerId, input.orderId);
  const { tables: named } = await runBuyerQuery(input.buyerId, "sqlTables", { sql: input.sql }, []);
  // DuckDB's names ignore case: "Products" and products are one view.
  const distinct = [...new Map(named.map((name) => [name.toLowerCase(), name])).values()];
  const views = await Promise.all(distinct.map((name) => viewOf(tables, name)));
  const files = views.flatMap((view) => [...view.files, ...(view.changes ?? []).map(({ file }) => file)]);
  return { views, files };
}

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
      `q: this order has no table ${JSON.stringify(name.slice(0, 100))} (its tables: ${known.join(", ") || "none"}; "name@N" is version N, "name@changes" its changes).`,
    );
  }
  if (suffix?.toLowerCase() === "changes") return { name, files: [], changes: await changeFiles(table) };
  const version = suffix === undefined ? table.currentVersion : Number(suffix);
  if (suffix !== undefined)
    await keptVersion(table, version).catch(() => Promise.reject(versionNotFound(table.name, version)));
  return { name, files: await versionFiles(table, version) };
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
