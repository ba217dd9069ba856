import { db } from "../db/client";
import { isTypedId } from "../ids";

/**
 * The buyer's last queries on the Query pages (contract Part 7): each SQL text, the order it ran on,
 * when, and how many rows it answered or why it failed. Only the newest HISTORY_LENGTH per buyer
 * are kept; every read and write is scoped by the buyer's id (the order is checked to be theirs).
 */
export const HISTORY_LENGTH = 20;

export type QueryHistoryEntry = {
  id: string;
  orderId: string;
  orderName: string;
  sql: string;
  ranAt: Date;
  rows: number | null;
  error: string | null;
};

/**
 * Records one query the buyer ran on one of their orders, then drops what is past the newest
 * HISTORY_LENGTH, in one transaction so two tabs running at once never leave more. Nothing is
 * recorded for an order that is not the buyer's.
 */
export async function recordQuery(
  buyerId: string,
  orderId: string,
  outcome: { sql: string; rows: number | null; error: string | null },
): Promise<void> {
  await db().$transaction(async (tx) => {
    const order = await tx.order.findFirst({ where: { id: orderId, buyerId }, select: { id: true } });
    if (!order) return;
    await tx.queryHistory.create({ data: { buyerId, orderId, ...outcome } });
    const kept = await tx.queryHistory.findMany({
      where: { buyerId },
      orderBy: { seq: "desc" },
      take: HISTORY_LENGTH,
      select: { id: true },
    });
    await tx.queryHistory.deleteMany({ where: { buyerId, id: { notIn: kept.map((entry) => entry.id) } } });
  });
}

/** The buyer's newest queries on any of their orders, newest first, each with its order's name. */
export async function queryHistory(buyerId: string): Promise<QueryHistoryEntry[]> {
  const entries = await db().queryHistory.findMany({
    where: { buyerId, order: { buyerId } },
    orderBy: { seq: "desc" },
    take: HISTORY_LENGTH,
    select: {
      id: true,
      orderId: true,
      sql: true,
      ranAt: true,
      rows: true,
      error: true,
      order: { select: { name: true } },
    },
  });
  return entries.map(({ order, ...entry }) => ({ ...entry, orderName: order.name }));
}

/** One of the buyer's past queries (to open it again on its order's Query page), or undefined. */
export async function pastQuery(buyerId: string, id: string): Promise<{ orderId: string; sql: string } | undefined> {
  if (!isTypedId("qry", id)) return undefined;
  const entry = await db().queryHistory.findFirst({
    where: { id, buyerId },
    select: { orderId: true, sql: true },
  });
  return entry ?? undefined;
}
