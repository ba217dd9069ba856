import type { Readable } from "node:stream";
import mime from "mime-types";
import { db, Prisma } from "../db/client";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { fileStorage } from "../storage";
import type { OrderStatus } from "./status";

/** What operators do with orders (the CLI, the demo seed): create them, add files, move their status. */

/** Creates a paid order for a buyer (orders are priced and paid outside this product). */
export async function createOrder(input: {
  buyerId: string;
  name: string;
  status?: OrderStatus;
  now?: Date;
}): Promise<{ id: string; status: OrderStatus }> {
  const name = input.name.trim();
  if (!name) throw new AppError("invalid_argument", "An order needs a non-empty name.");
  const status = input.status ?? "unfinished";
  const now = input.now ?? new Date();
  const order = await db().order.create({
    data: { buyerId: input.buyerId, name, status, paidAt: now, deliveredAt: status === "delivered" ? now : null },
    select: { id: true },
  });
  return { id: order.id, status };
}

/**
 * Moves an order to a status. Delivery time is set on first delivery and kept through a refund
 * (it was delivered then); back to unfinished clears it.
 */
export async function setOrderStatus(orderId: string, status: OrderStatus, now = new Date()) {
  const order = await findOrderForOperator(orderId);
  const deliveredAt =
    status === "unfinished" ? null : status === "delivered" ? (order.deliveredAt ?? now) : order.deliveredAt;
  const updated = await db().order.update({
    where: { id: orderId },
    data: { status, deliveredAt },
    select: { id: true, status: true, deliveredAt: true },
  });
  return updated;
}

/**
 * Adds a file to an order: streams `source` into storage while hashing it, then records it.
 * If recording fails (e.g. a file of that name exists), the stored bytes are removed again.
 */
export async function addOrderFile(input: {
  orderId: string;
  source: Readable;
  name: string;
  contentType?: string;
}): Promise<{ id: string; name: string; size: number; sha256: string; contentType: string }> {
  await findOrderForOperator(input.orderId);
  const name = input.name.trim();
  if (!name || name.includes("/") || name.includes("\\")) {
    throw new AppError("invalid_argument", `"${input.name}" is not a valid file name.`);
  }
  const contentType = input.contentType ?? (mime.lookup(name) || "application/octet-stream");
  if (!/^[\w.+-]+\/[\w.+-]+$/.test(contentType)) {
    throw new AppError("invalid_argument", `"${contentType}" is not a valid content type (e.g. text/csv).`);
  }
  const stored = await fileStorage().put(input.source, input.orderId);
  try {
    const file = await db().orderFile.create({
      data: {
        orderId: input.orderId,
        name,
        size: BigInt(stored.size),
        contentType,
        sha256: stored.sha256,
        storageKey: stored.key,
      },
      select: { id: true },
    });
    return { id: file.id, name, size: stored.size, sha256: stored.sha256, contentType };
  } catch (error) {
    await fileStorage().delete(stored.key);
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002") {
      throw new AppError("duplicate_file_name", `Order ${input.orderId} already has a file named "${name}".`);
    }
    throw error;
  }
}

async function findOrderForOperator(orderId: string) {
  // A malformed id names no order: refused before any query.
  const order = isTypedId("ord", orderId)
    ? await db().order.findUnique({ where: { id: orderId }, select: { id: true, deliveredAt: true } })
    : null;
  if (!order) throw new AppError("order_not_found", `No order with id ${orderId}.`);
  return order;
}
