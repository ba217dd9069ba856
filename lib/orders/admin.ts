import type { Readable } from "node:stream";
import mime from "mime-types";
import { db, Prisma } from "../db/client";
import { CONTROL_CHARACTERS, FILE_NAME_MAX_BYTES } from "../contract";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { fileStorage, hashStream, type StoredObject } from "../storage";
import { parseS3Location, readS3Object, storageError } from "../storage/s3";
import { formatFromName } from "../datasets/formats";
import { jobTransaction, QUEUES, sendJob } from "../jobs";
import { emitEvent } from "../webhooks/emit";
import { orderJson } from "./queries";
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
 * emits `order.delivered` / `order.refunded` in the same transaction (lib/webhooks/emit.ts): a
 * change is never committed unannounced.
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
    }
    return updated;
  });
}

export type AddedFile = { id: string; name: string; size: number; sha256: string; contentType: string };

/**
 * Adds a file to an order: streams `source` into the configured storage (STORAGE_DIR, or S3 with
 * a multipart upload) while hashing it, then records it. An aborted `signal` (the CLI on Ctrl+C)
 * or any failure leaves nothing: no row, no object. If recording fails (e.g. a file of that name
 * was added meanwhile), the stored bytes are removed again.
 */
export async function addOrderFile(input: {
  orderId: string;
  source: Readable;
  name: string;
  contentType?: string;
  signal?: AbortSignal;
}): Promise<AddedFile> {
  const file = await checkNewFile(input.orderId, input.name, input.contentType);
  const stored = await fileStorage().put(input.source, input.orderId, {
    contentType: file.contentType,
    signal: input.signal,
  });
  try {
    return await recordFile(input.orderId, file, stored);
  } catch (error) {
    await fileStorage().delete(stored.key);
    throw error;
  }
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
}): Promise<AddedFile> {
  const { key } = parseS3Location(input.location);
  const file = await checkNewFile(input.orderId, input.name ?? key.split("/").pop() ?? "", input.contentType);
  const object = await readS3Object(input.location);
  const stored = await hashStream(object.body).catch((error: unknown) => {
    throw storageError(error, input.location);
  });
  // Unless told otherwise, the type the object was stored with, when it says more than "bytes".
  if (!input.contentType && object.contentType && object.contentType !== "application/octet-stream") {
    file.contentType = checkedContentType(object.contentType.split(";")[0]!.trim());
  }
  return recordFile(input.orderId, file, { key: input.location, ...stored });
}

/** The file's name and type, checked before any byte is moved (a 100 GB upload must not fail at the end). */
async function checkNewFile(orderId: string, rawName: string, rawContentType: string | undefined) {
  await findOrderForOperator(orderId);
  const name = rawName.trim();
  const problem = fileNameProblem(name);
  if (problem) throw new AppError("invalid_argument", `${quoted(rawName)} is not a valid file name: ${problem}.`);
  const contentType = checkedContentType(rawContentType ?? contentTypeOf(name));
  if (await db().orderFile.count({ where: { orderId, name } })) throw duplicateName(orderId, name);
  return { name, contentType };
}

/**
 * Why a name cannot be a delivered file's name, or undefined. Buyers' tools save files under these
 * names, so a name is one path segment a file system takes: no separators, no "." or "..", no
 * control characters (PostgreSQL refuses NUL), at most FILE_NAME_MAX_BYTES.
 */
function fileNameProblem(name: string): string | undefined {
  if (!name || name === "." || name === "..") return "it needs a name";
  if (name.includes("/") || name.includes("\\")) return "it cannot contain / or \\";
  if (CONTROL_CHARACTERS.test(name)) return "it cannot contain control characters";
  if (Buffer.byteLength(name) > FILE_NAME_MAX_BYTES) return `it is longer than ${FILE_NAME_MAX_BYTES} bytes`;
  return undefined;
}

/** A name in double quotes with every control character escaped (\u007f), fit for a terminal. */
const quoted = (name: string) =>
  JSON.stringify(name).replace(
    /\p{Cc}/gu,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

function checkedContentType(contentType: string): string {
  if (!/^[\w.+-]+\/[\w.+-]+$/.test(contentType)) {
    throw new AppError("invalid_argument", `"${contentType}" is not a valid content type (e.g. text/csv).`);
  }
  return contentType;
}

/** Types mime-types does not know for formats scraped datasets come in: one JSON document per line. */
const DATASET_TYPES: Record<string, string> = { jsonl: "application/x-ndjson", ndjson: "application/x-ndjson" };

/** The content type a file's name suggests. */
export function contentTypeOf(name: string): string {
  const extension = name.toLowerCase().split(".").pop() ?? "";
  return DATASET_TYPES[extension] ?? (mime.lookup(name) || "application/octet-stream");
}

async function recordFile(
  orderId: string,
  file: { name: string; contentType: string },
  stored: StoredObject,
): Promise<AddedFile> {
  const { format, compression } = formatFromName(file.name);
  try {
    // A data file is profiled by the worker (lib/datasets): its job commits with the row.
    const row = await jobTransaction(async (tx) => {
      const created = await tx.orderFile.create({
        data: {
          orderId,
          name: file.name,
          size: BigInt(stored.size),
          contentType: file.contentType,
          sha256: stored.sha256,
          storageKey: stored.key,
          format,
          compression,
          profileStatus: format === "binary" ? "none" : "pending",
        },
        select: { id: true },
      });
      if (format !== "binary") await sendJob(QUEUES.datasetProfile, { fileId: created.id }, { tx });
      return created;
    });
    return { id: row.id, ...file, size: stored.size, sha256: stored.sha256 };
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002")
      throw duplicateName(orderId, file.name);
    throw error;
  }
}

function duplicateName(orderId: string, name: string): AppError {
  return new AppError("duplicate_file_name", `Order ${orderId} already has a file named "${name}".`);
}

/** An order by id for the operator (any buyer's), or order_not_found. */
export async function findOrderForOperator(orderId: string) {
  // A malformed id names no order: refused before any query.
  const order = isTypedId("ord", orderId)
    ? await db().order.findUnique({ where: { id: orderId }, select: { id: true, deliveredAt: true, refundedAt: true } })
    : null;
  if (!order) throw new AppError("order_not_found", `No order with id ${orderId}.`);
  return order;
}
