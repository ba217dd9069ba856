import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { streamingNodeRoute, withNodeBody } from "./node";
import { problemResponse } from "./problem";
import { noStoreRedirect } from "./responses";
import { contentDisposition, ifRangeAllows, notModified, parseRange, type RangeResult } from "../downloads/http";
import { DOWNLOAD_PATH, linkedObject } from "../downloads/links";
import { AppError } from "../errors";
import { localStorage } from "../storage";
import { LOCAL_READ_CHUNK_BYTES } from "../storage/local";

/**
 * Signed download links over HTTP (`/api/dl/<token>`): the HTTP adapter of lib/downloads/links.ts,
 * which says what a link serves. Here: ranges, ETag and 304, HEAD, streaming, problem+json.
 */

const DOWNLOAD_LINK_PATH = new RegExp(`^${DOWNLOAD_PATH}(?:/|$)`);

/** Whether a request path is a signed download link's (`/api/dl/<token>`, or a malformed one under /api/dl). */
export function isDownloadLinkPath(path: string): boolean {
  return DOWNLOAD_LINK_PATH.test(path);
}

/**
 * Serves the signed download links on the app's own HTTP server (scripts/http-server.ts), not
 * through Next.js: piped straight from the file to the socket, a 1 GiB download ran at 0.54x of a
 * bare fs.createReadStream server through Next.js's request handler and at its speed without it
 * (bench/download.ts). Everything under /api/dl is a link: a missing or extra segment is an invalid
 * link (problem+json), as a real token has no "/".
 */
export const serveDownloadLink: (req: IncomingMessage, res: ServerResponse) => Promise<void> = streamingNodeRoute(
  (request, { requestId, incoming }) => serveDownload(request, tokenOf(incoming.url ?? ""), { requestId }),
);

function tokenOf(url: string): string {
  const path = url.split("?", 1)[0]!.slice(DOWNLOAD_PATH.length + 1);
  try {
    return decodeURIComponent(path);
  } catch {
    return path; // not a token either way; refused as an invalid link
  }
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
  const linked = await linkedObject(token, now);
  if (linked.store === "s3") return noStoreRedirect(linked.url);
  const { file, size } = linked;

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
