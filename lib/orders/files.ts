import type { Readable } from "node:stream";
import mime from "mime-types";
import { db, Prisma } from "../db/client";
import { CONTROL_CHARACTERS, FILE_NAME_MAX_BYTES } from "../contract";
import { formatFromName } from "../data-formats";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { QUEUES, sendJob } from "../queue";
import { fileStorage, hashStream, type StoredObject } from "../storage";
import { parseS3Location, readS3Object, storageError } from "../storage/s3";

/**
 * A delivered file's bytes and row: the checks made before any byte moves, storing (or registering
 * an object already in S3), and recording the row with its profile job. Used by order:add-file
 * (lib/operator/orders.ts) and by table publications (lib/tables/publish.ts).
 */

export type AddedFile = { id: string; name: string; size: number; sha256: string; contentType: string };

/** Where a new file's bytes come from: a stream (stored), a local path (stored; re-readable) or an object in S3 (registered). */
export type FileSource = { stream: Readable } | { path: string; open: () => Readable } | { location: string };

/** An order by id for the operator (any buyer's), or order_not_found. */
export async function findOrderForOperator(orderId: string) {
  // A malformed id names no order: refused before any query.
  const order = isTypedId("ord", orderId)
    ? await db().order.findUnique({
        where: { id: orderId },
        select: { id: true, deliveredAt: true, refundedAt: true, status: true },
      })
    : null;
  if (!order) throw new AppError("order_not_found", `No order with id ${orderId}.`);
  return order;
}

/**
 * A new file's name and type, checked before any byte is moved (a 100 GB upload must not fail at
 * the end). `allowTakenBy` lets a name already recorded by one of these publications through (the
 * same unfinished publication resumed, or a failed one whose parts are replaced).
 */
export async function checkNewFile(
  orderId: string,
  rawName: string,
  rawContentType: string | undefined,
  { allowTakenBy = [] }: { allowTakenBy?: string[] } = {},
): Promise<{ name: string; contentType: string }> {
  const name = rawName.trim();
  const problem = fileNameProblem(name);
  if (problem) throw new AppError("invalid_argument", `${quoted(rawName)} is not a valid file name: ${problem}.`);
  const contentType = checkedContentType(rawContentType ?? contentTypeOf(name));
  const taken = await db().orderFile.findFirst({
    where: { orderId, origin: "delivered", name },
    select: { publicationId: true },
  });
  if (taken && !(taken.publicationId && allowTakenBy.includes(taken.publicationId))) throw duplicateName(orderId, name);
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
export const quoted = (name: string) =>
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

/**
 * The bytes of a new file: streamed into the configured storage (STORAGE_DIR, or S3 with a
 * multipart upload) while hashed, or, for an object already in S3, read once for its sha256 and
 * size and registered where it is (its type from the object unless given). An aborted `signal`
 * (the CLI on Ctrl+C) or a failure leaves no object.
 */
export async function storeFileBytes(
  orderId: string,
  file: { name: string; contentType: string; contentTypeGiven: boolean },
  source: FileSource,
  signal?: AbortSignal,
  /** A stable object name (lib/storage PutOptions.name), for bytes that a resumed upload must not store twice. */
  objectName?: string,
): Promise<StoredObject & { registered: boolean; contentType: string }> {
  if ("location" in source) {
    parseS3Location(source.location);
    const object = await readS3Object(source.location);
    const stored = await hashStream(object.body).catch((error: unknown) => {
      throw storageError(error, source.location);
    });
    // Unless told otherwise, the type the object was stored with, when it says more than "bytes".
    const storedType = object.contentType?.split(";")[0]!.trim();
    const contentType =
      !file.contentTypeGiven && storedType && storedType !== "application/octet-stream"
        ? checkedContentType(storedType)
        : file.contentType;
    return { key: source.location, ...stored, registered: true, contentType };
  }
  const stream = "stream" in source ? source.stream : source.open();
  const stored = await fileStorage().put(stream, orderId, { contentType: file.contentType, signal, name: objectName });
  return { ...stored, registered: false, contentType: file.contentType };
}

/**
 * Records a stored file's row, with its profile job when it holds data (the worker reads it,
 * lib/datasets), in `tx`. A name recorded meanwhile is duplicate_file_name.
 */
export async function recordFileRow(
  tx: Prisma.TransactionClient,
  orderId: string,
  file: { name: string; contentType: string },
  stored: StoredObject & { registered: boolean },
  publicationId?: string,
): Promise<AddedFile> {
  const { format, compression } = formatFromName(file.name);
  try {
    const created = await tx.orderFile.create({
      data: {
        orderId,
        name: file.name,
        size: BigInt(stored.size),
        contentType: file.contentType,
        sha256: stored.sha256,
        storageKey: stored.key,
        registered: stored.registered,
        format,
        compression,
        profileStatus: format === "binary" ? "none" : "pending",
        publicationId,
      },
      select: { id: true },
    });
    if (format !== "binary") await sendJob(QUEUES.datasetProfile, { fileId: created.id }, { tx });
    return { id: created.id, ...file, size: stored.size, sha256: stored.sha256 };
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002")
      throw duplicateName(orderId, file.name);
    throw error;
  }
}

/** Removes stored bytes that no row kept (a record that failed); a registered object is the seller's. */
export async function discardStoredBytes(stored: StoredObject & { registered: boolean }): Promise<void> {
  if (!stored.registered) await fileStorage().delete(stored.key);
}

export function duplicateName(orderId: string, name: string): AppError {
  return new AppError("duplicate_file_name", `Order ${orderId} already has a file named "${name}".`);
}
