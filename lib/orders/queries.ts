import type { z } from "zod";
import { NOTICE_DAYS } from "../contract";
import { db, Prisma, sqlQuery, type FileFormat, type ProfileStatus, type SqlRunner } from "../db/client";
import { AppError } from "../errors";
import { describeId, isTypedId } from "../ids";
import type { orderSchema } from "../schemas/api";
import type { OrderStatus } from "../schemas/order-status";
import { SEEN_FILE } from "./seen-files";
import { describedColumnsSql, freshnessSql } from "./table-promises-sql";

/**
 * Reads of a buyer's orders for the API. The tenant boundary lives here, once: every query is
 * scoped by buyer id, and another buyer's order is answered exactly like a missing one. A
 * malformed id is answered like a missing one too, before any query.
 *
 * Each read is one SQL statement that also builds the response JSON (the shapes are
 * lib/schemas/api.ts, which the tests hold these to). Building it in PostgreSQL takes that work
 * off the single Node.js process, which is the bottleneck under load (bench/api-list.ts).
 */

export const isoUtc = (column: Prisma.Sql) =>
  Prisma.sql`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A file row `f` as the API's File object; `p` and `t` are its publication and table (null for a
 * file that belongs to no table).
 */
export const FILE_JSON = Prisma.sql`json_build_object(
  'id', f.id,
  'name', f.name,
  'size', f.size,
  'content_type', f.content_type,
  'sha256', f.sha256,
  'created_at', ${isoUtc(Prisma.sql`f.created_at`)},
  'format', f.format,
  'compression', f.compression,
  'profile_status', f.profile_status,
  'rows', f.rows,
  'columns', f.columns,
  'profile_error', f.profile_error,
  'renditions', COALESCE((
    SELECT json_agg(json_build_object('format', r.format, 'size', r.size, 'sha256', r.sha256, 'status', r.status)
      ORDER BY r.format)
    FROM file_renditions r WHERE r.file_id = f.id), '[]'::json),
  'table', CASE WHEN t.id IS NULL THEN NULL ELSE json_build_object('name', t.name, 'version', p.version) END
)`;

/** A table row `t` as the API's Table object, `v` its current version (contract Part 4), with its recent notices (Part 6). */
export const TABLE_JSON = Prisma.sql`json_build_object(
  'name', t.name,
  'mode', t.mode,
  'key', CASE WHEN cardinality(t.key) = 0 THEN NULL ELSE to_json(t.key) END,
  'version', t.current_version,
  'rows', v.rows,
  'description', t.description,
  'columns', ${describedColumnsSql("t", Prisma.sql`v.columns`)},
  'updated_at', ${isoUtc(Prisma.sql`v.created_at`)},
  'freshness', ${freshnessSql("t", Prisma.sql`v.created_at`, isoUtc)},
  'notices', COALESCE((
    SELECT json_agg(json_build_object('id', n.id, 'type', n.type, 'message', n.message,
      'effective_at', ${isoUtc(Prisma.sql`n.effective_at`)}, 'created_at', ${isoUtc(Prisma.sql`n.created_at`)})
      ORDER BY n.created_at DESC, n.id DESC)
    FROM table_notices n
    WHERE n.table_id = t.id AND n.created_at > now() - make_interval(days => ${NOTICE_DAYS})), '[]'::json)
)`;

/**
 * An order's files as the buyer sees them listed: delivered files (never change files) the buyer
 * may see (./seen-files.ts: no part of a publication that is not a version), each with its table.
 * A snapshot table's parts leave the list when a newer version is made (they stay downloadable by
 * id until pruned); an append table's stay, as its data is every version's rows.
 */
const LISTED_FILES_FROM = Prisma.sql`
  FROM order_files f
  LEFT JOIN table_publications p ON p.id = f.publication_id
  LEFT JOIN order_tables t ON t.id = p.table_id
  WHERE f.origin = 'delivered' AND ${SEEN_FILE}
    AND (f.publication_id IS NULL OR t.mode = 'append' OR p.version = t.current_version)`;

/** An order row `o` as the API's Order object, files oldest first, tables by name. */
const ORDER_JSON = Prisma.sql`json_build_object(
  'id', o.id,
  'status', o.status,
  'name', o.name,
  'paid_at', ${isoUtc(Prisma.sql`o.paid_at`)},
  'delivered_at', ${isoUtc(Prisma.sql`o.delivered_at`)},
  'downloadable', o.status = 'delivered',
  'files', COALESCE((
    SELECT json_agg(${FILE_JSON} ORDER BY f.created_at, f.id) ${LISTED_FILES_FROM} AND f.order_id = o.id), '[]'::json),
  'tables', COALESCE((
    SELECT json_agg(${TABLE_JSON} ORDER BY t.name)
    FROM order_tables t LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = t.current_version
    WHERE t.order_id = o.id), '[]'::json)
)`;

/**
 * One page of the buyer's orders as the API's OrderPage JSON: newest paid first, id as the
 * tiebreak, so pages never overlap or skip. The page's ids come first from the
 * (buyer_id, paid_at DESC, id DESC) index alone (an index-only scan, so a deep offset skips
 * index entries, not rows); only the page's rows are then read. One row more than asked tells
 * whether another page exists.
 */
export async function orderPageJson(
  buyerId: string,
  page: { limit: number; offset: number },
  sql: SqlRunner = sqlQuery,
): Promise<string> {
  // Every list request runs this, so without Prisma's query machinery (see sqlQuery).
  const query = orderPageQuery(buyerId, page);
  const [row] = await sql<OrderPageRow>(query.text, query.values);
  return orderPageBody(row, page);
}

export type OrderPageRow = { data: string; fetched: number };

/** The statement behind orderPageJson (exported so the benchmark's floor runs exactly this SQL). */
export function orderPageQuery(buyerId: string, page: { limit: number; offset: number }): Prisma.Sql {
  return Prisma.sql`
    -- row_number() counts before OFFSET applies: the page's rows are positions offset+1 .. offset+limit.
    WITH page AS (
      SELECT id, row_number() OVER (ORDER BY paid_at DESC, id DESC) AS position
      FROM orders WHERE buyer_id = ${buyerId}
      ORDER BY paid_at DESC, id DESC
      OFFSET ${page.offset} LIMIT ${page.limit + 1}
    )
    SELECT
      (SELECT count(*) FROM page)::int AS fetched,
      COALESCE((
        SELECT json_agg(${ORDER_JSON} ORDER BY p.position)
        FROM page p JOIN orders o ON o.id = p.id
        WHERE p.position <= ${page.offset + page.limit}
      ), '[]'::json)::text AS data`;
}

export function orderPageBody(row: OrderPageRow | undefined, page: { limit: number; offset: number }): string {
  const nextOffset = row && row.fetched > page.limit ? page.offset + page.limit : null;
  return `{"data":${row?.data ?? "[]"},"next_offset":${nextOffset}}`;
}

/** One of the buyer's orders as the API's Order JSON (read through `sql`, e.g. in a transaction). */
export async function orderJson(buyerId: string, orderId: string, sql: SqlRunner = sqlQuery): Promise<string> {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  const query = Prisma.sql`
    SELECT ${ORDER_JSON}::text AS order FROM orders o WHERE o.id = ${orderId} AND o.buyer_id = ${buyerId}`;
  const [row] = await sql<{ order: string }>(query.text, query.values);
  if (!row) throw orderNotFound(orderId);
  return row.order;
}

export type DownloadableFile = {
  id: string;
  name: string;
  contentType: string;
  storageKey: string;
  format: FileFormat;
  profileStatus: ProfileStatus;
  profileError: string | null;
};

/** A file the buyer may download now: the order is theirs, the file is in it and theirs to see, the order is delivered. */
export async function getDownloadableFile(
  buyerId: string,
  orderId: string,
  fileId: string,
  sql: SqlRunner = sqlQuery,
): Promise<DownloadableFile> {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  // One row for the buyer's order, with the file's columns when the order has that file and the
  // buyer may see it (a part of a publication that is no version is answered as no file). A
  // malformed file id matches no file (and never reaches PostgreSQL as given).
  const query = Prisma.sql`
    SELECT o.status AS "orderStatus", f.id, f.name, f.content_type AS "contentType", f.storage_key AS "storageKey",
           f.format, f.profile_status AS "profileStatus", f.profile_error AS "profileError"
    FROM orders o LEFT JOIN order_files f ON f.order_id = o.id AND f.id = ${isTypedId("fil", fileId) ? fileId : ""}
      AND ${SEEN_FILE}
    WHERE o.id = ${orderId} AND o.buyer_id = ${buyerId}`;
  const [row] = await sql<{ orderStatus: OrderStatus } & { [K in keyof DownloadableFile]: DownloadableFile[K] | null }>(
    query.text,
    query.values,
  );
  if (!row) throw orderNotFound(orderId);
  if (!row.id) throw new AppError("file_not_found", `Order ${orderId} has no file ${describeId("fil", fileId)}.`);
  if (row.orderStatus !== "delivered") throw notDelivered(orderId, row.orderStatus);
  const { id, name, contentType, storageKey, format, profileStatus, profileError } = row as DownloadableFile;
  return { id, name, contentType, storageKey, format, profileStatus, profileError };
}

/** What an order that is not delivered refuses: its files' downloads, or the reads of its tables (rows, SQL, subsets). */
const ONLY_WHEN_DELIVERED = {
  files: "files can be downloaded only from delivered orders",
  tables: "tables can be read (rows, SQL, subsets) only from delivered orders",
} as const;

export function notDelivered(
  orderId: string,
  status: OrderStatus,
  refused: keyof typeof ONLY_WHEN_DELIVERED = "files",
): AppError {
  return new AppError("order_not_delivered", `Order ${orderId} is ${status}; ${ONLY_WHEN_DELIVERED[refused]}.`);
}

export function orderNotFound(orderId: string): AppError {
  return new AppError("order_not_found", `No order ${describeId("ord", orderId)} for this account.`);
}

export type OrderView = z.infer<typeof orderSchema>;

/** The same reads, parsed, for the dashboard and shared pages (same JSON, same tenant boundary). */
export async function orderPage(
  buyerId: string,
  page: { limit: number; offset: number },
): Promise<{ data: OrderView[]; next_offset: number | null }> {
  return JSON.parse(await orderPageJson(buyerId, page));
}

export async function getOrder(buyerId: string, orderId: string): Promise<OrderView> {
  return JSON.parse(await orderJson(buyerId, orderId));
}

/**
 * What the dashboard's order page shows beside the API's Order: its name (for the tab title) and
 * when it was refunded. The buyer's own order only; undefined for any other.
 */
export async function orderPageDetails(
  buyerId: string,
  orderId: string,
): Promise<{ name: string; refundedAt: Date | null } | undefined> {
  if (!isTypedId("ord", orderId)) return undefined;
  const order = await db().order.findFirst({
    where: { id: orderId, buyerId },
    select: { name: true, refundedAt: true },
  });
  return order ?? undefined;
}
