import { db } from "../db/client";
import { AppError } from "../errors";
import type { OrderStatus } from "./index";

/**
 * Reads of a buyer's orders. The tenant boundary lives here, once: every query is scoped by
 * buyer id, and another buyer's order is answered exactly like a missing one.
 */

export type FileView = {
  id: string;
  name: string;
  size: number;
  content_type: string;
  sha256: string;
  created_at: string;
};

export type OrderView = {
  id: string;
  status: OrderStatus;
  name: string;
  paid_at: string;
  delivered_at: string | null;
  downloadable: boolean;
  files: FileView[];
};

export type OrderPage = { data: OrderView[]; next_offset: number | null };

const orderSelect = {
  id: true,
  status: true,
  name: true,
  paidAt: true,
  deliveredAt: true,
  files: {
    select: { id: true, name: true, size: true, contentType: true, sha256: true, createdAt: true },
    orderBy: [{ createdAt: "asc" as const }, { id: "asc" as const }],
  },
};

type OrderRow = {
  id: string;
  status: OrderStatus;
  name: string;
  paidAt: Date;
  deliveredAt: Date | null;
  files: { id: string; name: string; size: bigint; contentType: string; sha256: string; createdAt: Date }[];
};

function toView(order: OrderRow): OrderView {
  return {
    id: order.id,
    status: order.status,
    name: order.name,
    paid_at: order.paidAt.toISOString(),
    delivered_at: order.deliveredAt?.toISOString() ?? null,
    downloadable: order.status === "delivered",
    files: order.files.map((file) => ({
      id: file.id,
      name: file.name,
      size: Number(file.size),
      content_type: file.contentType,
      sha256: file.sha256,
      created_at: file.createdAt.toISOString(),
    })),
  };
}

/** Newest paid first, id as the tiebreak, so pages never overlap or skip. */
export async function listOrders(buyerId: string, page: { limit: number; offset: number }): Promise<OrderPage> {
  const rows = await db().order.findMany({
    where: { buyerId },
    orderBy: [{ paidAt: "desc" }, { id: "desc" }],
    skip: page.offset,
    take: page.limit + 1, // one more than asked tells whether another page exists
    select: orderSelect,
  });
  const hasMore = rows.length > page.limit;
  return { data: rows.slice(0, page.limit).map(toView), next_offset: hasMore ? page.offset + page.limit : null };
}

export async function getOrder(buyerId: string, orderId: string): Promise<OrderView> {
  const order = await db().order.findFirst({ where: { id: orderId, buyerId }, select: orderSelect });
  if (!order) throw orderNotFound(orderId);
  return toView(order);
}

/** A file the buyer may download now: the order is theirs, the file is in it, the order is delivered. */
export async function getDownloadableFile(buyerId: string, orderId: string, fileId: string) {
  const order = await db().order.findFirst({
    where: { id: orderId, buyerId },
    select: { id: true, status: true, files: { where: { id: fileId }, select: { id: true } } },
  });
  if (!order) throw orderNotFound(orderId);
  const file = order.files[0];
  if (!file) throw new AppError("file_not_found", `Order ${orderId} has no file ${fileId}.`);
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
  return new AppError("order_not_found", `No order ${orderId} for this account.`);
}
