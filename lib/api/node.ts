import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { pipeline } from "node:stream/promises";
import type { NextApiRequest, NextApiResponse } from "next";
import { requestIdFrom } from "./request-id";
import { isReadOnlyMethod, methodNotAllowed } from "./responses";

/**
 * The API and the download links are web-standard handlers (Request -> Response) served on Node's
 * req/res from Pages Router API routes, rather than App Router route handlers: App Router
 * responses lose Content-Length in Next.js 16, and their per-request machinery cost 1.4x the CPU
 * under load (bench/api-list.ts).
 */
export type WebHandler = (
  request: Request,
  context: {
    requestId: string;
    query: NextApiRequest["query"];
    /** Node's request, for what a web Request lacks (the client's address). */
    incoming: IncomingMessage;
  },
) => Promise<Response>;

/**
 * A read-only route: GET and HEAD go to `handle`, any other method gets 405 before a web Request
 * is made (undici refuses to make one for TRACE, which would otherwise end as Next's bare 500).
 * `stream` sends the body as it comes (downloads); short answers go out whole, with their length.
 */
export function readOnlyNodeRoute(handle: WebHandler, { stream = false }: { stream?: boolean } = {}) {
  return async (req: IncomingMessage & { query?: NextApiRequest["query"] }, res: ServerResponse): Promise<void> => {
    const requestId = requestIdFrom(req.headers["x-request-id"]);
    if (!isReadOnlyMethod(req.method)) return sendResponse(res, methodNotAllowed(req.method ?? "", requestId));
    const response = await handle(webRequest(req, res, stream), { requestId, query: req.query ?? {}, incoming: req });
    return sendResponse(res, response, stream);
  };
}

/** Any method, answered without a web Request (for the API's catch-all 404). */
export function anyMethodNodeRoute(answer: (path: string, requestId: string) => Response) {
  return (req: NextApiRequest, res: NextApiResponse): Promise<void> =>
    sendResponse(
      res,
      answer(new URL(req.url ?? "/", "http://localhost").pathname, requestIdFrom(req.headers["x-request-id"])),
    );
}

function webRequest(req: IncomingMessage, res: ServerResponse, stream: boolean): Request {
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
  return new Request(requestUrl(req), { method: req.method, headers: webHeaders(req), signal });
}

/** Node's request headers as web Headers. */
export function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
    else if (Array.isArray(value)) value.forEach((item) => headers.append(name, item));
  }
  return headers;
}

/** The request's URL; a Host header that is not a host name does not make it fail. */
function requestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
  } catch {
    return new URL(req.url ?? "/", "http://localhost");
  }
}

const nodeBodies = new WeakMap<Response, () => Readable>();

/**
 * Gives a streamed response a Node source for its body: served on Node's response, the bytes are
 * piped from it straight to the socket (a file at the speed of fs.createReadStream) and the
 * response's web body, which stays for web callers (tests), is never opened.
 */
export function withNodeBody(response: Response, open: () => Readable): Response {
  nodeBodies.set(response, open);
  return response;
}

export async function sendResponse(res: ServerResponse, response: Response, stream = false): Promise<void> {
  const headers = Object.fromEntries(response.headers);
  const nodeBody = stream && response.body ? nodeBodies.get(response) : undefined;
  if (nodeBody) {
    res.writeHead(response.status, headers);
    await pipeline(nodeBody(), res).catch(() => {
      // The client disconnected mid-stream; pipeline has closed the source.
    });
  } else if (!response.body) {
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
