import type { z } from "zod";
import { db, Prisma, sqlQuery } from "../db/client";
import { AppError } from "../errors";
import { describeId, isTypedId } from "../ids";
import type { orderSchema } from "../schemas/api";
import type { OrderStatus } from "./status";

/**
 * Reads of a buyer's orders for the API. The tenant boundary lives here, once: every query is
 * scoped by buyer id, and another buyer's order is answered exactly like a missing one. A
 * malformed id is answered like a missing one too, before any query.
 *
 * Each read is one SQL statement that also builds the response JSON (the shapes are
 * lib/schemas/api.ts, which the tests hold these to). Building it in PostgreSQL takes that work
 * off the single Node.js process, which is the bottleneck under load (bench/api-list.ts).
 */

const isoUtc = (column: Prisma.Sql) =>
  Prisma.sql`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** An order row `o` as the API's Order object, files oldest first. */
const ORDER_JSON = Prisma.sql`json_build_object(
  'id', o.id,
  'status', o.status,
  'name', o.name,
  'paid_at', ${isoUtc(Prisma.sql`o.paid_at`)},
  'delivered_at', ${isoUtc(Prisma.sql`o.delivered_at`)},
  'downloadable', o.status = 'delivered',
  'files', COALESCE((
    SELECT json_agg(json_build_object(
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
        FROM file_renditions r WHERE r.file_id = f.id), '[]'::json)
    ) ORDER BY f.created_at, f.id)
    FROM order_files f WHERE f.order_id = o.id), '[]'::json)
)`;

/**
 * One page of the buyer's orders as the API's OrderPage JSON: newest paid first, id as the
 * tiebreak, so pages never overlap or skip. The page's ids come first from the
 * (buyer_id, paid_at DESC, id DESC) index alone (an index-only scan, so a deep offset skips
 * index entries, not rows); only the page's rows are then read. One row more than asked tells
 * whether another page exists.
 */
export async function orderPageJson(buyerId: string, page: { limit: number; offset: number }): Promise<string> {
  // Every list request runs this, so without Prisma's query machinery (see sqlQuery).
  const query = orderPageQuery(buyerId, page);
  const [row] = await sqlQuery<OrderPageRow>(query.text, query.values);
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

/** One of the buyer's orders as the API's Order JSON (read through `client`, e.g. a transaction). */
export async function orderJson(
  buyerId: string,
  orderId: string,
  client: Pick<Prisma.TransactionClient, "$queryRaw"> = db(),
): Promise<string> {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  const [row] = await client.$queryRaw<{ order: string }[]>`
    SELECT ${ORDER_JSON}::text AS order FROM orders o WHERE o.id = ${orderId} AND o.buyer_id = ${buyerId}`;
  if (!row) throw orderNotFound(orderId);
  return row.order;
}

/** A file the buyer may download now: the order is theirs, the file is in it, the order is delivered. */
export async function getDownloadableFile(buyerId: string, orderId: string, fileId: string) {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  const order = await db().order.findFirst({
    where: { id: orderId, buyerId },
    // A malformed file id matches no file (and never reaches PostgreSQL as given).
    select: {
      id: true,
      status: true,
      files: {
        where: { id: isTypedId("fil", fileId) ? fileId : "" },
        select: {
          id: true,
          name: true,
          contentType: true,
          storageKey: true,
          format: true,
          profileStatus: true,
          profileError: true,
        },
      },
    },
  });
  if (!order) throw orderNotFound(orderId);
  const file = order.files[0];
  if (!file) throw new AppError("file_not_found", `Order ${orderId} has no file ${describeId("fil", fileId)}.`);
  if (order.status !== "delivered") throw notDelivered(orderId, order.status);
  return file;
}

export function notDelivered(orderId: string, status: OrderStatus): AppError {
  return new AppError(
    "order_not_delivered",
    `Order ${orderId} is ${status}; files can be downloaded only from delivered orders.`,
  );
}

function orderNotFound(orderId: string): AppError {
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
