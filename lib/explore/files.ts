import { sqlQuery } from "../db/client";
import type { QueryFile } from "../engine/query-tasks";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { notDelivered, orderNotFound } from "../orders/queries";
import type { OrderStatus } from "../schemas/order-status";
import { driverOf, localStorage } from "../storage";
import { tableNotFound, versionNotFound } from "../tables/queries";
import { TABLE_NAME_PATTERN } from "../tables/names";
import { cachedCopy, type CachedSource } from "./query-cache";

/**
 * What a query of an order may read, from PostgreSQL: the buyer's delivered order (another buyer's
 * is answered like a missing one; a refunded one 409 as for downloads), its tables, a version's
 * parts (their Parquet renditions; an append table's version is every kept version up to it) and
 * the change files. Files are handed to the engine as local paths: an object in S3 is copied into
 * the query cache (./query-cache.ts; DuckDB's httpfs is not available here).
 */

export type OrderTable = {
  id: string;
  name: string;
  mode: "snapshot" | "append";
  key: string[];
  currentVersion: number | null;
};
export type TableVersion = { version: number; columns: { name: string; type: string }[] };

/** The buyer's order, checked to be delivered, with its tables. */
export async function deliveredOrderTables(buyerId: string, orderId: string): Promise<OrderTable[]> {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  const [order] = await sqlQuery<{ status: OrderStatus }>(`SELECT status FROM orders WHERE id = $1 AND buyer_id = $2`, [
    orderId,
    buyerId,
  ]);
  if (!order) throw orderNotFound(orderId);
  if (order.status !== "delivered") throw notDelivered(orderId, order.status, "tables");
  return sqlQuery<OrderTable>(
    `SELECT id, name, mode, key, current_version AS "currentVersion" FROM order_tables
     WHERE order_id = $1 ORDER BY name COLLATE "C"`,
    [orderId],
  );
}

/** A part of a version as stored: its file, name and Parquet rendition's location. */
export type VersionPart = { fileId: string; name: string; storageKey: string };

/**
 * The parts holding the rows of version `v` of table `t` (append: every kept version up to it), by
 * version and name, as a JSON array: a subquery of the statements that name `t` and `v`.
 */
const PARTS_OF_VERSION = `(SELECT coalesce(json_agg(json_build_object('fileId', f.id, 'name', f.name,
       'storageKey', r.storage_key) ORDER BY pv.version, f.name COLLATE "C"), '[]')
     FROM table_versions pv
     JOIN order_files f ON f.publication_id = pv.publication_id
     JOIN file_renditions r ON r.file_id = f.id AND r.format = 'parquet' AND r.status = 'ready'
     WHERE pv.table_id = t.id AND pv.pruned_at IS NULL
       AND (pv.version = v.version OR (t.mode = 'append' AND pv.version < v.version)))`;

/**
 * One table of the buyer's delivered order, a kept version of it (`version`, default the current
 * one) and its parts (for readableParts), refused as deliveredOrderTables, tableOf and keptVersion
 * refuse, in their order: in one statement, as rows and subsets ask it on every call.
 */
export async function deliveredTableVersion(
  buyerId: string,
  orderId: string,
  name: string,
  version: number | undefined,
): Promise<{ table: OrderTable & { currentVersion: number }; version: TableVersion; parts: VersionPart[] }> {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  const [row] = await sqlQuery<{
    status: OrderStatus;
    table: OrderTable | null;
    version: TableVersion | null;
    parts: VersionPart[] | null;
  }>(
    `SELECT o.status,
       CASE WHEN t.id IS NOT NULL THEN json_build_object('id', t.id, 'name', t.name, 'mode', t.mode, 'key', t.key,
         'currentVersion', t.current_version) END AS "table",
       CASE WHEN v.version IS NOT NULL THEN json_build_object('version', v.version, 'columns', v.columns) END AS version,
       CASE WHEN v.version IS NOT NULL THEN ${PARTS_OF_VERSION} END AS parts
     FROM orders o
     LEFT JOIN order_tables t ON t.order_id = o.id AND t.name = $3
     LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = COALESCE($4::int, t.current_version)
       AND v.pruned_at IS NULL
     WHERE o.id = $1 AND o.buyer_id = $2`,
    [orderId, buyerId, TABLE_NAME_PATTERN.test(name) ? name : null, version ?? null],
  );
  if (!row) throw orderNotFound(orderId);
  if (row.status !== "delivered") throw notDelivered(orderId, row.status, "tables");
  const table = tableOf(row.table ? [row.table] : [], orderId, name);
  if (!row.version) throw versionNotFound(table.name, version ?? table.currentVersion);
  return { table, version: row.version, parts: row.parts ?? [] };
}

/** One table of the order with a version. */
export function tableOf(tables: OrderTable[], orderId: string, name: string): OrderTable & { currentVersion: number } {
  const table = TABLE_NAME_PATTERN.test(name) ? tables.find((one) => one.name === name) : undefined;
  if (!table || table.currentVersion === null) throw tableNotFound(orderId, name);
  return table as OrderTable & { currentVersion: number };
}

/** A kept version of the table (its columns), or version_not_found. */
export async function keptVersion(table: OrderTable, version: number): Promise<TableVersion> {
  const [row] = await sqlQuery<TableVersion>(
    `SELECT version, columns FROM table_versions WHERE table_id = $1 AND version = $2 AND pruned_at IS NULL`,
    [table.id, version],
  );
  if (!row) throw versionNotFound(table.name, version);
  return row;
}

/**
 * The parts holding the version's rows (append: every kept version up to it), by version and name,
 * and the version's columns in the table's own types.
 */
export async function versionFiles(
  table: OrderTable,
  version: number,
): Promise<{ files: QueryFile[]; columns: TableVersion["columns"] }> {
  const [row] = await sqlQuery<{ parts: VersionPart[]; columns: TableVersion["columns"] }>(
    `SELECT ${PARTS_OF_VERSION} AS parts, v.columns
     FROM order_tables t JOIN table_versions v ON v.table_id = t.id AND v.version = $2
     WHERE t.id = $1`,
    [table.id, version],
  );
  return { files: await readableParts(table, version, row?.parts ?? []), columns: row?.columns ?? [] };
}

/** `parts` as files the engine can read; none yet (its renditions being made) is rendition_pending. */
export async function readableParts(table: OrderTable, version: number, parts: VersionPart[]): Promise<QueryFile[]> {
  if (parts.length === 0) {
    throw new AppError(
      "rendition_pending",
      `The parts of ${table.name} version ${version} are being made ready: ask again in 5 seconds.`,
      { "Retry-After": "5" },
    );
  }
  return Promise.all(
    parts.map(async (part) => ({
      name: part.name,
      path: await readablePath({ fileId: part.fileId, rendition: true }, part.storageKey),
    })),
  );
}

/** Each kept version's change file (version 1's: its rows as inserts) and columns, oldest first. */
export async function changeFiles(
  table: OrderTable,
): Promise<{ version: number; file: QueryFile; columns: TableVersion["columns"] }[]> {
  const rows = await sqlQuery<{
    version: number;
    fileId: string;
    name: string;
    storageKey: string;
    columns: TableVersion["columns"];
  }>(
    `SELECT v.version, f.id AS "fileId", f.name, f.storage_key AS "storageKey", v.columns
     FROM table_versions v JOIN order_files f ON f.id = v.change_file_id
     WHERE v.table_id = $1 AND v.pruned_at IS NULL ORDER BY v.version`,
    [table.id],
  );
  return Promise.all(
    rows.map(async (row) => ({
      version: row.version,
      columns: row.columns,
      file: { name: row.name, path: await readablePath({ fileId: row.fileId, rendition: false }, row.storageKey) },
    })),
  );
}

/** A local path DuckDB can read for a stored object: the file itself, or its copy in the query cache. */
function readablePath(source: CachedSource, location: string): Promise<string> {
  if (driverOf(location) === "local") return Promise.resolve(localStorage().pathOf(location));
  return cachedCopy(source, location);
}
