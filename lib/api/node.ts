import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { pipeline } from "node:stream/promises";
import type { NextApiRequest, NextApiResponse } from "next";
import { methodNotAllowed } from "./with-api-key";

/**
 * Web-standard handlers (Request -> Response) served on Node's req/res, for Pages Router API
 * routes. The API and the download links are served that way rather than as App Router route
 * handlers: App Router responses lose Content-Length in Next.js 16, and their per-request
 * machinery cost 1.4x the CPU under load (bench/api-list.ts).
 */
export async function serveOnNode(
  req: IncomingMessage,
  res: ServerResponse,
  handle: (request: Request) => Promise<Response>,
  { stream = false }: { stream?: boolean } = {},
): Promise<void> {
  // A streamed body is abandoned when the client goes away ('close' before the response
  // finished); short answers do not need the signal, and skip its cost.
  let signal: AbortSignal | undefined;
  if (stream) {
    const client = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) client.abort();
    });
    signal = client.signal;
  }
  const requestHeaders = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") requestHeaders.set(name, value);
    else if (Array.isArray(value)) value.forEach((item) => requestHeaders.append(name, item));
  }
  const request = new Request(requestUrl(req), {
    method: req.method,
    headers: requestHeaders,
    signal,
  });
  const response = await handle(request);
  const headers = Object.fromEntries(response.headers);
  if (!response.body) {
    res.writeHead(response.status, headers);
    res.end();
  } else if (!stream) {
    // A short body goes out whole, with its length (not chunked), in one write.
    const body = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, "Content-Length": String(body.length) });
    res.end(body);
  } else {
    res.writeHead(response.status, headers);
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res).catch(() => {
      // The client disconnected mid-stream; the source is already closed.
    });
  }
}

/** The request's URL; a Host header that is not a host name does not make it fail. */
function requestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
  } catch {
    return new URL(req.url ?? "/", "http://localhost");
  }
}

type WebHandler<Params> = (request: Request, context: { params: Promise<Params> }) => Promise<Response>;

/** A read-only API route: GET (and HEAD, whose body Node drops) to `get`, anything else 405. */
export function readOnlyApiRoute<Params extends Record<string, string>>(get: WebHandler<Params>) {
  return (req: NextApiRequest, res: NextApiResponse) =>
    serveOnNode(req, res, (request) => {
      if (request.method !== "GET" && request.method !== "HEAD") return methodNotAllowed(request);
      return get(request, { params: Promise.resolve(req.query as Params) });
    });
}
