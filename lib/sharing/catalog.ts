import { sqlQuery } from "../db/client";
import type { Column } from "../datasets/profile";

/**
 * What a buyer's share holds, read from PostgreSQL. The tenant boundary is here, once: every
 * statement is scoped by the buyer's id and by the order being delivered, so another buyer's
 * order, a refunded one and an unfinished one are all simply absent (a refund hides its tables at
 * the very next request). A table is a file of such an order with a profile and a ready Parquet
 * rendition. Lists are keyset-paged by id, so pages neither overlap nor skip when orders arrive.
 */

export type SharedSchema = { orderId: string; orderName: string };
export type SharedTableName = SharedSchema & { fileId: string; fileName: string };
export type SharedTable = SharedTableName & {
  rows: number;
  columns: Column[];
  storageKey: string;
  size: number;
  sha256: string;
  version: number;
  /** When its rendition was last made (the table version's time). */
  updatedAt: Date;
};

const TABLES_FROM = `
  FROM orders o
  JOIN order_files f ON f.order_id = o.id AND f.profile_status = 'ready'
  JOIN file_renditions r ON r.file_id = f.id AND r.format = 'parquet' AND r.status = 'ready'
  WHERE o.buyer_id = $1 AND o.status = 'delivered'`;

/** Delivered orders after `afterOrderId`, by id; one more than `limit` tells whether a next page exists. */
export async function sharedSchemas(buyerId: string, afterOrderId: string, limit: number): Promise<SharedSchema[]> {
  return sqlQuery<SharedSchema>(
    `SELECT id AS "orderId", name AS "orderName" FROM orders
     WHERE buyer_id = $1 AND status = 'delivered' AND id > $2 ORDER BY id LIMIT $3`,
    [buyerId, afterOrderId, limit],
  );
}

/** The delivered order `orderId` of the buyer, if it is one. */
export async function sharedSchema(buyerId: string, orderId: string): Promise<SharedSchema | undefined> {
  const [schema] = await sqlQuery<SharedSchema>(
    `SELECT id AS "orderId", name AS "orderName" FROM orders WHERE buyer_id = $1 AND id = $2 AND status = 'delivered'`,
    [buyerId, orderId],
  );
  return schema;
}

/** Tables after (`after.orderId`, `after.fileId`), in one order (`orderId`) or all of them. */
export async function sharedTables(
  buyerId: string,
  orderId: string | null,
  after: { orderId: string; fileId: string },
  limit: number,
): Promise<SharedTableName[]> {
  return sqlQuery<SharedTableName>(
    `SELECT o.id AS "orderId", o.name AS "orderName", f.id AS "fileId", f.name AS "fileName" ${TABLES_FROM}
       AND ($2::text IS NULL OR o.id = $2) AND (o.id, f.id) > ($3, $4)
     ORDER BY o.id, f.id LIMIT $5`,
    [buyerId, orderId, after.orderId, after.fileId, limit],
  );
}

/** One table with what its metadata and query answers need. */
export async function sharedTable(buyerId: string, orderId: string, fileId: string): Promise<SharedTable | undefined> {
  const [row] = await sqlQuery<Omit<SharedTable, "rows" | "size"> & { rows: string; size: string }>(
    `SELECT o.id AS "orderId", o.name AS "orderName", f.id AS "fileId", f.name AS "fileName", f.rows, f.columns,
            r.storage_key AS "storageKey", r.size, r.sha256, r.version, r.updated_at AS "updatedAt" ${TABLES_FROM}
       AND o.id = $2 AND f.id = $3`,
    [buyerId, orderId, fileId],
  );
  return row && { ...row, rows: Number(row.rows), size: Number(row.size) };
}
