import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { pipeline } from "node:stream/promises";
import { requestIdFrom } from "../request-id";
import { textBodyOf } from "./text-response";
import { isReadOnlyMethod, methodNotAllowed } from "./responses";

/**
 * The API and the download links are web-standard handlers (Request -> Response) served on Node's
 * req/res from Pages Router API routes, rather than App Router route handlers: App Router
 * responses lose Content-Length in Next.js 16, and their per-request machinery cost 1.4x the CPU
 * under load (bench/api-list.ts).
 */
export type WebHandler<Incoming extends RouteRequest = RouteRequest> = (
  request: Incoming,
  context: {
    requestId: string;
    /** The path parameters, decoded (lib/http/route-table.ts). */
    params: Record<string, string>;
    /** Node's request, for what a web Request lacks (the client's address). */
    incoming: IncomingMessage;
  },
) => Promise<Response>;

/** What a route with a short answer reads of its request, as a web Request has it, and its lifetime on Node. */
export type RouteRequest = Pick<Request, "url" | "method" | "headers"> & { readonly lifetime?: RequestLifetime };

/**
 * A request's life on Node's server: `signal` aborts when its client leaves before the answer is
 * complete; `answered` resolves when the response is over (written out, or its client gone). A
 * query holds its account's running place until then (lib/engine/engine-pool.ts).
 */
export type RequestLifetime = { signal: AbortSignal; answered: Promise<void> };

/** The lifetime of the request `res` answers. */
export function requestLifetime(res: ServerResponse): RequestLifetime {
  const client = new AbortController();
  const answered = new Promise<void>((resolve) => {
    res.once("close", () => {
      if (!res.writableFinished) client.abort();
      resolve();
    });
  });
  return { signal: client.signal, answered };
}

export type NodeRoute = (req: IncomingMessage, res: ServerResponse, params?: Record<string, string>) => Promise<void>;

/**
 * A read-only route with a short answer, sent whole with its length: GET and HEAD go to `handle`,
 * any other method gets 405 (undici cannot even make a web Request for TRACE, which would
 * otherwise end as Next's bare 500). The handler sees Node's request as a web Request would show
 * it, its URL and headers made only if read: most API requests read neither, and making a
 * Request cost a twentieth of the CPU per request (bench/api-accounts.ts, profiled).
 */
export function readOnlyNodeRoute(handle: WebHandler): NodeRoute {
  return nodeRoute(handle, (req, res) => new NodeRequestView(req, res), false);
}

/**
 * A read-only route whose body is sent as it comes (downloads), to a web Request whose signal is
 * aborted when the client goes away before the answer is complete.
 */
export function streamingNodeRoute(handle: WebHandler<Request>): NodeRoute {
  return nodeRoute(handle, streamingRequest, true);
}

function nodeRoute<Incoming extends RouteRequest>(
  handle: WebHandler<Incoming>,
  request: (req: IncomingMessage, res: ServerResponse) => Incoming,
  stream: boolean,
): NodeRoute {
  return async (req, res, params = {}) => {
    const requestId = requestIdFrom(req.headers["x-request-id"]);
    if (!isReadOnlyMethod(req.method)) return sendResponse(res, methodNotAllowed(req.method ?? "", requestId));
    const response = await handle(request(req, res), { requestId, params, incoming: req });
    return sendResponse(res, response, stream);
  };
}

/** Node's request as a RouteRequest: URL, Headers and lifetime made on first read. */
class NodeRequestView implements RouteRequest {
  #url?: string;
  #headers?: Headers;
  #lifetime?: RequestLifetime;
  constructor(
    private readonly incoming: IncomingMessage,
    private readonly response: ServerResponse,
  ) {}
  get lifetime(): RequestLifetime {
    return (this.#lifetime ??= requestLifetime(this.response));
  }
  get method(): string {
    return this.incoming.method ?? "GET";
  }
  get url(): string {
    return (this.#url ??= requestUrl(this.incoming).href);
  }
  get headers(): Headers {
    return (this.#headers ??= webHeaders(this.incoming));
  }
}

/** A web Request for a streamed answer: its signal tells the body's source that the client left. */
function streamingRequest(req: IncomingMessage, res: ServerResponse): Request {
  return new Request(requestUrl(req), {
    method: req.method,
    headers: webHeaders(req),
    signal: requestLifetime(res).signal,
  });
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
    // A text goes to Node as it is: written with the headers in one string, without a Buffer of its own.
    const body = textBodyOf(response) ?? Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, "Content-Length": String(Buffer.byteLength(body)) });
    res.end(body);
  } else {
    res.writeHead(response.status, headers);
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res).catch(() => {
      // The client disconnected mid-stream; the source is already closed.
    });
  }
}
