import path from "node:path";
import type { Readable } from "node:stream";
import { db } from "../db/client";
import { formatFromName } from "../data-formats";
import { AppError } from "../errors";
import { jobTransaction } from "../queue";
import { parseS3Location } from "../storage/s3";
import { tableNameFor } from "../tables/names";
import { publishTable } from "../tables/publish";
import { emitEvent } from "../webhooks/emit";
import { queueExportRuns } from "../exports/runs";
import {
  checkNewFile,
  discardStoredBytes,
  findOrderForOperator,
  recordFileRow,
  storeFileBytes,
  type AddedFile,
  type FileSource,
} from "../orders/files";
import { orderJson } from "../orders/queries";
import type { OrderStatus } from "../schemas/order-status";

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
    data: {
      buyerId: input.buyerId,
      name,
      status,
      paidAt: now,
      deliveredAt: status === "delivered" ? now : null,
      refundedAt: status === "refunded" ? now : null,
    },
    select: { id: true },
  });
  return { id: order.id, status };
}

/**
 * Moves an order to a status. Delivery time is set on first delivery and kept through a refund
 * (it was delivered then); back to unfinished clears it. Refund time is set on refund (kept if
 * refunded again) and cleared when the order leaves that status. Becoming delivered or refunded
 * emits `order.delivered` / `order.refunded` in the same transaction (lib/webhooks/emit.ts), and
 * a delivery queues its export runs there too: a change is never committed unannounced.
 */
export async function setOrderStatus(orderId: string, status: OrderStatus, now = new Date()) {
  return jobTransaction(async (tx) => {
    // Locked, so two status changes of one order are applied (and announced) one after the other.
    const [order] = await tx.$queryRaw<
      { status: OrderStatus; deliveredAt: Date | null; refundedAt: Date | null; buyerId: string }[]
    >`
      SELECT status, delivered_at AS "deliveredAt", refunded_at AS "refundedAt", buyer_id AS "buyerId"
      FROM orders WHERE id = ${orderId} FOR UPDATE`;
    if (!order) throw new AppError("order_not_found", `No order with id ${orderId}.`);
    const deliveredAt =
      status === "unfinished" ? null : status === "delivered" ? (order.deliveredAt ?? now) : order.deliveredAt;
    const updated = await tx.order.update({
      where: { id: orderId },
      data: { status, deliveredAt, refundedAt: status === "refunded" ? (order.refundedAt ?? now) : null },
      select: { id: true, status: true, deliveredAt: true },
    });
    if (status !== order.status && (status === "delivered" || status === "refunded")) {
      const data = JSON.parse(
        await orderJson(order.buyerId, orderId, (text, values) => tx.$queryRawUnsafe(text, ...values)),
      );
      await emitEvent(tx, { buyerId: order.buyerId, type: `order.${status}`, data, at: now });
      // A delivered order goes to the buyer's export destinations (lib/exports), committed with the change.
      if (status === "delivered") {
        await queueExportRuns(tx, { buyerId: order.buyerId, orderId, trigger: "order.delivered", at: now });
      }
    }
    return updated;
  });
}

export type { AddedFile } from "../orders/files";

/**
 * Adds a file to an order, as `order:add-file` does: its bytes are stored (streamed into
 * STORAGE_DIR, or S3 with a multipart upload, hashed on the way) or, for an object already in S3,
 * registered where it is. A data file (by its name) is published as the only part of a new snapshot
 * table named after it (lib/tables/names.ts), or of `table` when given; a binary file belongs to no
 * table. An aborted `signal` (the CLI on Ctrl+C) or any failure leaves no row pointing at a missing
 * object; a data file's add run again after a kill resumes its publication.
 */
export async function addOrderFile(input: {
  orderId: string;
  source: Readable | FileSource;
  name?: string;
  contentType?: string;
  table?: string;
  signal?: AbortSignal;
}): Promise<AddedFile & { table: string | null }> {
  await findOrderForOperator(input.orderId);
  const source: FileSource = "pipe" in input.source ? { stream: input.source } : input.source;
  const name = (input.name ?? defaultName(source)).trim();
  if (formatFromName(name).format !== "binary") return addDataFile({ ...input, source, name });
  const file = await checkNewFile(input.orderId, name, input.contentType);
  const stored = await storeFileBytes(
    input.orderId,
    { ...file, contentTypeGiven: input.contentType !== undefined },
    source,
    input.signal,
  );
  try {
    const added = await jobTransaction((tx) =>
      recordFileRow(tx, input.orderId, { name: file.name, contentType: stored.contentType }, stored),
    );
    return { ...added, table: null };
  } catch (error) {
    await discardStoredBytes(stored);
    throw error;
  }
}

/**
 * A data file as the one part of a publication: of `table`, or of a new table named after the file
 * (the same add run again after a kill resumes the table its first run made).
 */
async function addDataFile(input: {
  orderId: string;
  source: FileSource;
  name: string;
  contentType?: string;
  table?: string;
  signal?: AbortSignal;
}): Promise<AddedFile & { table: string }> {
  const part = { name: input.name, contentType: input.contentType, source: input.source };
  if (input.table) {
    const published = await publishTable({
      orderId: input.orderId,
      table: input.table,
      parts: [part],
      signal: input.signal,
    });
    return { ...published.files[0]!, table: published.table };
  }
  const unfinished = await db().tablePublication.findFirst({
    where: { status: "uploading", partNames: { equals: [input.name] }, table: { orderId: input.orderId } },
    orderBy: { createdAt: "desc" },
    select: { table: { select: { name: true } } },
  });
  if (unfinished) {
    const published = await publishTable({
      orderId: input.orderId,
      table: unfinished.table.name,
      parts: [part],
      signal: input.signal,
    });
    return { ...published.files[0]!, table: published.table };
  }
  // A name taken by another add-file at the same moment is tried again with the next free one.
  for (let attempt = 0; ; attempt++) {
    const taken = new Set(
      (await db().orderTable.findMany({ where: { orderId: input.orderId }, select: { name: true } })).map(
        (table) => table.name,
      ),
    );
    try {
      const published = await publishTable({
        orderId: input.orderId,
        table: tableNameFor(input.name, (name) => taken.has(name)),
        parts: [part],
        signal: input.signal,
        newTable: true,
      });
      return { ...published.files[0]!, table: published.table };
    } catch (error) {
      if (!(error instanceof AppError && error.code === "table_conflict") || attempt >= 5) throw error;
    }
  }
}

function defaultName(source: FileSource): string {
  if ("path" in source) return path.basename(source.path);
  if ("location" in source) return parseS3Location(source.location).key.split("/").pop() ?? "";
  throw new AppError("invalid_argument", "A file read from a stream needs a name.");
}

/**
 * Registers an object already in S3-compatible storage (`s3://bucket/key`) as a file of an order,
 * without copying it: it is read once for its SHA-256 and size. A missing object, a missing bucket
 * or denied access is an error naming the object, and nothing is recorded. The object is the
 * seller's: it is never deleted by this app.
 */
export async function registerStoredObject(input: {
  orderId: string;
  location: string;
  name?: string;
  contentType?: string;
  table?: string;
}): Promise<AddedFile & { table: string | null }> {
  parseS3Location(input.location);
  return addOrderFile({ ...input, source: { location: input.location } });
}

export { contentTypeOf, findOrderForOperator } from "../orders/files";
