import type { IncomingMessage, ServerResponse } from "node:http";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { AppError, type ErrorCode } from "../errors";
import { keyedRequest } from "../http/keyed-request";
import { readBodyWithin } from "../http/request-body";
import { requestLifetime, sendResponse, webHeaders, type RequestLifetime } from "../http/node";
import { API_ERRORS } from "../http/problem";
import { unexpectedError } from "../http/unexpected-error";
import { annotateRequest } from "../observability";
import { requestIdFrom } from "../request-id";
import { configuredOrigin, publicOrigin } from "../site";
import { originAllowed } from "./origin";
import { paramsIssue } from "./params";
import { MCP_PATH } from "./path";
import { MCP_PROTOCOL_VERSIONS, MCP_TOOL_NAMES, mcpServerFor } from "./server";

export const MCP_PATH_PATTERN = /^\/api\/mcp\/?(\?|$)/;
/** The largest request body read; an agent's tool call is a few kilobytes. */
export const MCP_MAX_BODY_BYTES = 1024 * 1024;
/**
 * The deepest nesting of arrays and objects a body may have. An agent's message nests a few
 * levels; a deeper one would reach the SDK, whose recursive handling of it (JSON.stringify of an
 * unexpected response) overflows the stack and answers the exception's text.
 */
export const MCP_MAX_DEPTH = 64;

// JSON-RPC's own error codes, and the implementation-defined one for what happens over HTTP.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;
const SERVER_ERROR = -32000;

/**
 * Serves /api/mcp on the app's own HTTP server (scripts/http-server.ts), stateless: each POST gets
 * a new McpServer and transport (JSON answers, no session), so two instances answer alike. Before
 * the SDK sees a request: the method (POST only: a stateless server offers no GET stream and no
 * session to DELETE, so both are 405), the Origin (DNS rebinding, 403), then the keyed-request
 * pipeline of /api/v1 (the key's rules, datasets:read, the account's 60/minute, usage counted per
 * key), then the body (over 1 MiB 413; not JSON, nested deeper than MCP_MAX_DEPTH, a batch, no
 * message of MCP's, or a protocol version we do not speak, 400). No answer carries an exception's text. Every refusal is a JSON-RPC error body with the HTTP status the transports spec names.
 */
export async function serveMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = requestIdFrom(req.headers["x-request-id"]);
  annotateRequest(req, { route: "mcp" });
  let response: Response;
  if (req.method !== "POST") {
    response = jsonRpcError(
      405,
      SERVER_ERROR,
      `${printable(req.method ?? "")} is not allowed: this MCP server is stateless and answers POST only.`,
      { Allow: "POST" },
    );
  } else if (!originAllowed(headerOf(req, "origin"), configuredOrigin())) {
    response = jsonRpcError(403, SERVER_ERROR, "This Origin may not call the MCP server (DNS rebinding protection).");
  } else {
    response = await keyedRequest({
      incoming: req,
      requestId,
      permission: "datasets:read",
      surface: "The MCP server",
      renderError: mcpErrorResponse,
      handle: ({ key }) => answer(req, { buyerId: key.buyerId, requestId, lifetime: requestLifetime(res) }),
    });
  }
  response.headers.set("X-Request-Id", requestId);
  response.headers.set("Cache-Control", "no-store");
  await sendResponse(res, response);
}

async function answer(
  req: IncomingMessage,
  { buyerId, requestId, lifetime }: { buyerId: string; requestId: string; lifetime: RequestLifetime },
) {
  const body = await jsonBody(req);
  if (body instanceof Response) return body;
  const refused = refusal(req, body);
  if (refused) return refused;
  const headers = webHeaders(req);
  const url = `http://localhost${MCP_PATH}`;
  const server = mcpServerFor({ buyerId, requestId, lifetime, origin: publicOrigin({ headers, url }) });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(new Request(url, { method: "POST", headers }), { parsedBody: body });
  } finally {
    await server.close();
  }
}

/** The body as JSON, or the JSON-RPC answer refusing it (too large, not JSON). */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const body = await readBodyWithin(req, MCP_MAX_BODY_BYTES);
  if (body === null) {
    return jsonRpcError(413, SERVER_ERROR, `The request body is over ${MCP_MAX_BODY_BYTES / 1024 / 1024} MiB.`, {
      Connection: "close",
    });
  }
  const text = body.toString("utf8");
  if (nestingOver(text, MCP_MAX_DEPTH)) {
    return jsonRpcError(400, PARSE_ERROR, `Parse error: the body nests deeper than ${MCP_MAX_DEPTH} levels.`);
  }
  try {
    return JSON.parse(text);
  } catch {
    return jsonRpcError(400, PARSE_ERROR, "Parse error: the body is not JSON.");
  }
}

/** Whether `text`'s arrays and objects nest deeper than `max` (brackets inside strings aside), read before it is parsed. */
function nestingOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c)
        index++; // a backslash: the next character is escaped
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      if (++depth > max) return true;
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
  return false;
}

/**
 * What this server refuses that the SDK would take: a batch (removed from the protocol in
 * 2025-06-18), a protocol version it does not speak, a call to a tool it does not have (a JSON-RPC
 * error, not a tool result: the spec's "unknown tool"). An initialize asking for another version is
 * answered with the newest we speak, as the lifecycle's negotiation says; the client then decides.
 */
function refusal(req: IncomingMessage, body: unknown): Response | undefined {
  if (Array.isArray(body)) {
    return jsonRpcError(
      400,
      INVALID_REQUEST,
      "Invalid Request: batches are not supported (protocol 2025-06-18 and later).",
    );
  }
  const version = headerOf(req, "mcp-protocol-version");
  if (version !== null && !(MCP_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
    return jsonRpcError(
      400,
      SERVER_ERROR,
      `Bad Request: unsupported protocol version ${printable(version)} (supported: ${MCP_PROTOCOL_VERSIONS.join(", ")}).`,
    );
  }
  const invalid = invalidMessage(body);
  if (invalid) return jsonRpcError(400, INVALID_REQUEST, `Invalid Request: ${invalid}.`);
  const message = body as Record<string, unknown>;
  const id = typeof message.id === "string" || typeof message.id === "number" ? message.id : null;
  const wrongParams = paramsProblem(message);
  if (wrongParams) return jsonRpcError(200, INVALID_PARAMS, `Invalid params: ${wrongParams}.`, {}, id);
  // The rest of the SDK's message schema (a member JSON-RPC lacks, a fractional id): -32600 here,
  // where the SDK would answer -32700 "Parse error" of JSON that parsed.
  if (!JSONRPCMessageSchema.safeParse(body).success) {
    return jsonRpcError(400, INVALID_REQUEST, "Invalid Request: the message is no JSON-RPC message MCP defines.");
  }
  if (!isObject(message.params)) return undefined;
  const params = message.params;
  if (
    message.method === "initialize" &&
    !(MCP_PROTOCOL_VERSIONS as readonly unknown[]).includes(params.protocolVersion)
  ) {
    params.protocolVersion = MCP_PROTOCOL_VERSIONS[0];
  }
  if (message.method === "tools/call" && !(MCP_TOOL_NAMES as readonly unknown[]).includes(params.name)) {
    return jsonRpcError(
      200,
      INVALID_PARAMS,
      `Unknown tool: ${printable(String(params.name))}. Call tools/list for the tools.`,
      {},
      id,
    );
  }
  return undefined;
}

/**
 * Why JSON is no JSON-RPC message (JSON-RPC's -32600, where the SDK would say -32700 "Parse
 * error" of JSON that parsed), or undefined: an object, `jsonrpc` "2.0", an id that is a string or
 * a number, a method that is a string (or an answer: result or error).
 */
function invalidMessage(body: unknown): string | undefined {
  if (!isObject(body)) return "the body is JSON but not a JSON-RPC message (an object)";
  if (body.jsonrpc !== "2.0") return 'a JSON-RPC message has "jsonrpc": "2.0"';
  if ("id" in body && typeof body.id !== "string" && typeof body.id !== "number") {
    return "the id must be a string or a number";
  }
  if (typeof body.method !== "string" && !("result" in body) && !("error" in body)) {
    return "the message has no method (a string)";
  }
  return undefined;
}

/**
 * What is wrong with a request's params where the SDK would answer -32603 "Internal error" with
 * its schema's validation dump: params that are no object, a tools/call or initialize without them,
 * a tool call without a name or with arguments that are no object, then anything else the method's
 * schema refuses (./params.ts). A notification's are left to the message schema: it has no answer.
 */
function paramsProblem(message: Record<string, unknown>): string | undefined {
  const { method, params } = message;
  if (!("id" in message) || typeof method !== "string") return undefined;
  if (params !== undefined && !isObject(params)) return "params must be an object";
  if (method === "tools/call") {
    if (!isObject(params) || typeof params.name !== "string") {
      return "tools/call needs params.name (a tool's name, from tools/list) and params.arguments (an object)";
    }
    if (params.arguments !== undefined && !isObject(params.arguments)) return "params.arguments must be an object";
  }
  if (method === "initialize" && !isObject(params)) {
    return "initialize needs params: protocolVersion, capabilities and clientInfo";
  }
  return paramsIssue(method, params);
}

/**
 * The keyed-request pipeline's refusals (key, permission, rate limit, database) as JSON-RPC errors
 * with the API's HTTP status: 401 with WWW-Authenticate, 403, 429 with Retry-After and the RateLimit
 * headers; `data` carries the API's error code and the request id.
 */
export function mcpErrorResponse(error: unknown, requestId: string, headers: Record<string, string> = {}): Response {
  const known =
    error instanceof AppError ? (API_ERRORS as Partial<Record<ErrorCode, { status: number }>>)[error.code] : undefined;
  if (error instanceof AppError && known) {
    const extra: Record<string, string> = { ...headers, ...error.headers };
    if (known.status === 401) extra["WWW-Authenticate"] = 'Bearer realm="mcp"';
    return jsonRpcError(known.status, SERVER_ERROR, error.message, extra, null, {
      code: error.code,
      request_id: requestId,
    });
  }
  const unexpected = unexpectedError(error, requestId);
  const extra: Record<string, string> = { ...headers };
  if (unexpected.retryAfterSeconds !== undefined) extra["Retry-After"] = String(unexpected.retryAfterSeconds);
  const code = unexpected.kind === "unavailable" ? "service_unavailable" : "internal_error";
  return jsonRpcError(unexpected.status, SERVER_ERROR, unexpected.message, extra, null, {
    code,
    request_id: requestId,
  });
}

function jsonRpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: string | number | null = null,
  data?: Record<string, string>,
): Response {
  const body = { jsonrpc: "2.0", id, error: { code, message, ...(data ? { data } : {}) } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...headers, "Content-Type": "application/json" },
  });
}

function headerOf(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === "string" ? value : Array.isArray(value) ? (value[0] ?? null) : null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const printable = (text: string) => text.replace(/[^\x20-\x7e]/g, "?").slice(0, 100);
