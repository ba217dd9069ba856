import type { IncomingMessage } from "node:http";

/**
 * How much of a too-large body is read and thrown away before the refusal is sent. A client
 * writes its whole body before it reads the answer: a server that answers and closes while the
 * client still writes makes the client's write fail (EPIPE, "fetch failed"), and the client never
 * sees the 413. Past this much, the connection is closed under the sender all the same: waiting
 * for gigabytes would be worse.
 */
export const DISCARDED_BODY_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * The request's body, or null when it is over `maxBytes`. A body over the limit is read to its
 * end (up to DISCARDED_BODY_LIMIT_BYTES) without being kept, so that its sender can read the
 * refusal. Leaving the loop early would destroy the request, and with it the socket the refusal
 * has to go out on.
 */
export async function readBodyWithin(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  if (Number(req.headers["content-length"] ?? 0) > DISCARDED_BODY_LIMIT_BYTES) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > DISCARDED_BODY_LIMIT_BYTES) return null;
    if (size <= maxBytes) chunks.push(chunk);
  }
  return size > maxBytes ? null : Buffer.concat(chunks);
}
