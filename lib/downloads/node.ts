import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { serveDownload } from "./index";

/**
 * Serves a signed download link on a Node response, so every header serveDownload sets,
 * Content-Length included, reaches the client unchanged.
 */
export async function sendDownload(req: IncomingMessage, res: ServerResponse, token: string): Promise<void> {
  const client = new AbortController();
  // 'close' before the response finished means the client went away: stop reading the file.
  res.once("close", () => {
    if (!res.writableFinished) client.abort();
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
    else if (Array.isArray(value)) value.forEach((item) => headers.append(name, item));
  }
  const request = new Request(new URL(req.url ?? "/", "http://localhost"), {
    method: req.method,
    headers,
    signal: client.signal,
  });
  const response = await serveDownload(request, token);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), res).catch(() => {
    // The client disconnected mid-download; the file stream is already closed.
  });
}
