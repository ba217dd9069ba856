import { sqlQuery } from "../db/client";
import type { ColumnStats } from "../engine/parquet-stats";
import type { Column } from "../datasets/profile";
import { SEEN_FILE } from "../orders/seen-files";

/**
 * What a buyer's share holds, read from PostgreSQL. The tenant boundary is here, once: every
 * statement is scoped by the buyer's id and by the order being delivered, so another buyer's
 * order, a refunded one and an unfinished one are all simply absent (a refund hides its tables at
 * the very next request). A table is a table of such an order (contract Part 4) with at least one
 * version; its versions' parts are its files (those the buyer may see: lib/orders/seen-files.ts),
 * each served as its ready Parquet rendition. Lists are keyset-paged, so pages neither overlap nor
 * skip when orders arrive.
 */

export type SharedSchema = { orderId: string; orderName: string };
export type SharedTableName = SharedSchema & { tableId: string; name: string };
export type SharedTable = SharedTableName & {
  mode: "snapshot" | "append";
  key: string[];
  currentVersion: number;
  /** The data dictionary's table description and column descriptions (only those described). */
  description: string | null;
  columnComments: Record<string, string>;
};
/** A version of a table: when it was made, and whether table:prune removed its parts. */
export type SharedVersion = { version: number; createdAt: Date; pruned: boolean };
export type VersionDetail = SharedVersion & { columns: Column[]; rows: number };
/** A part of a version, as its Parquet rendition. */
export type SharedPart = {
  version: number;
  fileId: string;
  name: string;
  rows: number;
  storageKey: string;
  size: number;
  sha256: string;
  stats: ColumnStats | null;
};
/** A version's change file (a Parquet file of the order, origin change_feed). */
export type SharedChangeFile = {
  version: number;
  createdAt: Date;
  fileId: string;
  name: string;
  storageKey: string;
  size: number;
  sha256: string;
};

const DELIVERED = `o.buyer_id = $1 AND o.status = 'delivered'`;

/** Delivered orders after `afterOrderId`, by id; one more than `limit` tells whether a next page exists. */
export async function sharedSchemas(buyerId: string, afterOrderId: string, limit: number): Promise<SharedSchema[]> {
  return sqlQuery<SharedSchema>(
    `SELECT id AS "orderId", name AS "orderName" FROM orders o
     WHERE ${DELIVERED} AND id > $2 ORDER BY id LIMIT $3`,
    [buyerId, afterOrderId, limit],
  );
}

/** The delivered order `orderId` of the buyer, if it is one. */
export async function sharedSchema(buyerId: string, orderId: string): Promise<SharedSchema | undefined> {
  const [schema] = await sqlQuery<SharedSchema>(
    `SELECT id AS "orderId", name AS "orderName" FROM orders o WHERE ${DELIVERED} AND id = $2`,
    [buyerId, orderId],
  );
  return schema;
}

/** Tables with a version after (`after.orderId`, `after.name`), in one order (`orderId`) or all of them. */
export async function sharedTables(
  buyerId: string,
  orderId: string | null,
  after: { orderId: string; name: string },
  limit: number,
): Promise<SharedTableName[]> {
  // COLLATE "C": the keyset order is byte order, whatever the database's collation.
  return sqlQuery<SharedTableName>(
    `SELECT o.id AS "orderId", o.name AS "orderName", t.id AS "tableId", t.name
     FROM orders o JOIN order_tables t ON t.order_id = o.id AND t.current_version IS NOT NULL
     WHERE ${DELIVERED} AND ($2::text IS NULL OR o.id = $2)
       AND (o.id COLLATE "C", t.name COLLATE "C") > ($3::text COLLATE "C", $4::text COLLATE "C")
     ORDER BY o.id COLLATE "C", t.name COLLATE "C" LIMIT $5`,
    [buyerId, orderId, after.orderId, after.name, limit],
  );
}

/** One table with a version, by its order and name. */
export async function sharedTable(buyerId: string, orderId: string, name: string): Promise<SharedTable | undefined> {
  const [row] = await sqlQuery<SharedTable>(
    `SELECT o.id AS "orderId", o.name AS "orderName", t.id AS "tableId", t.name, t.mode, t.key,
            t.current_version AS "currentVersion", t.description,
            COALESCE((SELECT jsonb_object_agg(d.key, d.value ->> 'description') FROM jsonb_each(t.column_docs) d
                      WHERE d.value ->> 'description' IS NOT NULL), '{}') AS "columnComments"
     FROM orders o JOIN order_tables t ON t.order_id = o.id AND t.current_version IS NOT NULL
     WHERE ${DELIVERED} AND o.id = $2 AND t.name = $3`,
    [buyerId, orderId, name],
  );
  return row;
}

const VERSIONS_FROM = `
  FROM table_versions v
  JOIN order_tables t ON t.id = v.table_id
  JOIN orders o ON o.id = t.order_id
  WHERE ${DELIVERED} AND v.table_id = $2`;

/** Every version of a table, oldest first (pruned ones too: their numbers and times stay known). */
export async function sharedVersions(buyerId: string, tableId: string): Promise<SharedVersion[]> {
  return sqlQuery<SharedVersion>(
    `SELECT v.version, v.created_at AS "createdAt", v.pruned_at IS NOT NULL AS pruned ${VERSIONS_FROM}
     ORDER BY v.version`,
    [buyerId, tableId],
  );
}

/** One version with its columns and rows. */
export async function sharedVersion(
  buyerId: string,
  tableId: string,
  version: number,
): Promise<VersionDetail | undefined> {
  const [row] = await sqlQuery<Omit<VersionDetail, "rows"> & { rows: string }>(
    `SELECT v.version, v.created_at AS "createdAt", v.pruned_at IS NOT NULL AS pruned, v.columns, v.rows
     ${VERSIONS_FROM} AND v.version = $3`,
    [buyerId, tableId, version],
  );
  return row && { ...row, rows: Number(row.rows) };
}

/** The parts of the given (kept) versions, each with its ready Parquet rendition, by version and name. */
export async function sharedParts(buyerId: string, tableId: string, versions: number[]): Promise<SharedPart[]> {
  if (versions.length === 0) return [];
  const rows = await sqlQuery<Omit<SharedPart, "rows" | "size"> & { rows: string; size: string }>(
    `SELECT v.version, f.id AS "fileId", f.name, f.rows, r.storage_key AS "storageKey", r.size, r.sha256, r.stats
     FROM table_versions v
     JOIN order_tables t ON t.id = v.table_id
     JOIN orders o ON o.id = t.order_id
     JOIN order_files f ON f.publication_id = v.publication_id AND f.order_id = o.id
     JOIN file_renditions r ON r.file_id = f.id AND r.format = 'parquet' AND r.status = 'ready'
     WHERE ${DELIVERED} AND v.table_id = $2 AND v.version = ANY($3::int[]) AND v.pruned_at IS NULL
       AND ${SEEN_FILE.text}
     ORDER BY v.version, f.name COLLATE "C"`,
    [buyerId, tableId, versions],
  );
  return rows.map((row) => ({ ...row, rows: Number(row.rows), size: Number(row.size) }));
}

/** The change files of the kept versions from `from` to `to`, by version. */
export async function sharedChangeFiles(
  buyerId: string,
  tableId: string,
  from: number,
  to: number,
): Promise<SharedChangeFile[]> {
  const rows = await sqlQuery<Omit<SharedChangeFile, "size"> & { size: string }>(
    `SELECT v.version, v.created_at AS "createdAt", f.id AS "fileId", f.name, f.storage_key AS "storageKey",
            f.size, f.sha256
     FROM table_versions v
     JOIN order_tables t ON t.id = v.table_id
     JOIN orders o ON o.id = t.order_id
     JOIN order_files f ON f.id = v.change_file_id AND f.order_id = o.id
     WHERE ${DELIVERED} AND v.table_id = $2 AND v.version BETWEEN $3 AND $4 AND v.pruned_at IS NULL
     ORDER BY v.version`,
    [buyerId, tableId, from, to],
  );
  return rows.map((row) => ({ ...row, size: Number(row.size) }));
}
