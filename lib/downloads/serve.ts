import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { problemResponse } from "../api/problem";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { db } from "../db/client";
import { RENDITION_CONTENT_TYPES, RENDITION_FORMATS, renditionName } from "../datasets/formats";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { notDelivered } from "../orders/queries";
import { withNodeBody } from "../api/node";
import { noStoreRedirect } from "../api/responses";
import { countDownloadRedirect } from "../metrics";
import { driverOf, localStorage } from "../storage";
import { LOCAL_READ_CHUNK_BYTES } from "../storage/local";
import { presignedGetUrl } from "../storage/s3";
import { contentDisposition, ifRangeAllows, notModified, parseRange, type RangeResult } from "./http";
import { signDownloadToken, verifyDownloadToken } from "./token";

/** Where signed links are served: by the app's own HTTP server (./route.ts). */
export const DOWNLOAD_PATH = "/api/dl";

export type DownloadTarget = { id: string; name: string; contentType: string; storageKey: string };

/**
 * A link to one file's bytes, valid for DOWNLOAD_LINK_TTL_SECONDS and usable without an API key:
 * for a file in object storage a presigned GET of the store (the bytes never pass through this
 * server), for a local file a link signed with AUTH_SECRET and served by serveDownload.
 */
export async function downloadUrl(file: DownloadTarget, origin: string, now = new Date()): Promise<string> {
  const driver = driverOf(file.storageKey);
  countDownloadRedirect(driver);
  if (driver === "s3") {
    return presignedGetUrl(
      file.storageKey,
      { contentDisposition: contentDisposition(file.name), contentType: file.contentType },
      DOWNLOAD_LINK_TTL_SECONDS,
    );
  }
  const expiresAt = new Date(now.getTime() + DOWNLOAD_LINK_TTL_SECONDS * 1000);
  return `${origin.replace(/\/+$/, "")}${DOWNLOAD_PATH}/${signDownloadToken({ fileId: file.id, expiresAt })}`;
}

/**
 * Answers a GET or HEAD on a signed download link (the route refuses other methods): the file's
 * bytes (whole or one range), 304 for a current copy, or a problem response. The order's status is
 * re-checked on every request, so a link stops working as soon as the order is no longer delivered.
 */
export async function serveDownload(
  request: Request,
  token: string,
  { requestId = randomUUID(), now = new Date() }: { requestId?: string; now?: Date } = {},
): Promise<Response> {
  let response: Response;
  try {
    response = await respond(request, token, now, requestId);
  } catch (error) {
    response = problemResponse(error, requestId);
  }
  // A HEAD answer carries the headers GET would, never a body (problem bodies included).
  return request.method === "HEAD" && response.body ? new Response(null, response) : response;
}

async function respond(request: Request, token: string, now: Date, requestId: string): Promise<Response> {
  const { fileId: servedId } = verifyDownloadToken(token, now);
  const file = await servedObject(servedId);
  if (file.order.status !== "delivered") throw notDelivered(file.order.id, file.order.status);
  // Moved to object storage since this link was made (storage:migrate): the store serves it.
  if (driverOf(file.storageKey) === "s3") return noStoreRedirect(await downloadUrl(file, "", now));
  const size = await localStorage().size(file.storageKey);
  // Serving bytes that differ from the recorded file would break its ETag and checksum promise.
  if (size !== Number(file.size)) {
    throw new Error(`Stored object ${file.storageKey} has ${size} bytes; the database records ${file.size}.`);
  }

  // Files never change after upload (a new upload is a new file), so the checksum is a strong ETag.
  const etag = `"${file.sha256}"`;
  const headers = new Headers({
    "X-Request-Id": requestId,
    ETag: etag,
    "Last-Modified": file.createdAt.toUTCString(),
    // Each link lives minutes; nothing should keep the response (or the link) around. no-transform
    // keeps compression off, which would drop Content-Length and garble byte ranges.
    "Cache-Control": "private, no-store, no-transform",
  });
  if (notModified(request.headers, etag, file.createdAt)) return new Response(null, { status: 304, headers });

  headers.set("Accept-Ranges", "bytes");
  // Range handling is defined for GET only (RFC 9110 14.2); HEAD describes the whole file.
  const range: RangeResult =
    request.method === "GET" && ifRangeAllows(request.headers.get("if-range"), etag)
      ? parseRange(request.headers.get("range"), size)
      : { type: "full" };
  if (range.type === "unsatisfiable") {
    return problemResponse(
      new AppError("range_not_satisfiable", `The requested range is outside the file's ${size} bytes.`),
      requestId,
      { "Content-Range": `bytes */${size}`, "Accept-Ranges": "bytes" },
    );
  }

  headers.set("Content-Type", file.contentType);
  headers.set("Content-Disposition", contentDisposition(file.name));
  headers.set("X-Content-Type-Options", "nosniff");
  const partial = range.type === "partial" ? { start: range.start, end: range.end } : undefined;
  if (partial) headers.set("Content-Range", `bytes ${partial.start}-${partial.end}/${size}`);
  const length = partial ? partial.end - partial.start + 1 : size;
  headers.set("Content-Length", String(length));

  const status = partial ? 206 : 200;
  if (request.method === "HEAD" || length === 0) return new Response(null, { status, headers });
  const open = () => localStorage().read(file.storageKey, partial);
  return withNodeBody(new Response(webStream(open, request.signal), { status, headers }), open);
}

/**
 * What a link's id names: a file (`fil_…`) or one of its renditions (`fil_….parquet`), with what
 * serving it needs. Only this server signs ids, but a malformed one must never reach PostgreSQL
 * (a NUL byte is an error there).
 */
async function servedObject(servedId: string) {
  const [fileId = "", format, ...rest] = servedId.split(".");
  const rendition = format === undefined ? undefined : RENDITION_FORMATS.find((known) => known === format);
  if (!isTypedId("fil", fileId) || rest.length > 0 || (format !== undefined && !rendition)) {
    throw new AppError("file_not_found", "This file no longer exists.");
  }
  const file = await db().orderFile.findUnique({
    where: { id: fileId },
    select: {
      id: true,
      name: true,
      size: true,
      contentType: true,
      sha256: true,
      storageKey: true,
      createdAt: true,
      order: { select: { id: true, status: true } },
      renditions: {
        where: { format: rendition, status: "ready" },
        select: { storageKey: true, size: true, sha256: true, updatedAt: true },
      },
    },
  });
  if (!file) throw new AppError("file_not_found", `File ${fileId} no longer exists.`);
  if (!rendition) return file;
  const made = file.renditions[0];
  if (!made?.storageKey || made.size === null || !made.sha256) {
    throw new AppError("file_not_found", `File ${fileId} has no ${rendition} rendition any more.`);
  }
  return {
    ...file,
    id: servedId,
    name: renditionName(file.name, rendition),
    contentType: RENDITION_CONTENT_TYPES[rendition],
    storageKey: made.storageKey,
    size: made.size,
    sha256: made.sha256,
    createdAt: made.updatedAt,
  };
}

/**
 * The bytes as a web stream for web callers, opened on the first read, with byte-counted
 * backpressure so memory stays flat however large the file. Cancelling it destroys the file
 * stream; the abort listener also covers a client that disconnects between two reads.
 */
function webStream(open: () => Readable, signal: AbortSignal): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const start = () => {
    const source = open();
    const abort = () => source.destroy();
    if (signal.aborted) abort();
    signal.addEventListener("abort", abort, { once: true });
    source.once("close", () => signal.removeEventListener("abort", abort));
    const strategy = new ByteLengthQueuingStrategy({ highWaterMark: LOCAL_READ_CHUNK_BYTES });
    return (Readable.toWeb(source, { strategy }) as ReadableStream<Uint8Array>).getReader();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        reader ??= start();
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader?.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
