import type { IncomingMessage, ServerResponse } from "node:http";
import { sendResponse, webHeaders } from "../api/node";
import { requestIdFrom } from "../api/request-id";
import { clientIp } from "../auth/signin-limits";
import { AppError } from "../errors";
import { countKeyUse } from "../keys/usage";
import { authenticateApiKey } from "../keys/verify";
import { annotateRequest } from "../observability";
import { authFailures } from "../ratelimit/auth-failures";
import { DATASETS_POLICY, enforceRatePolicy } from "../ratelimit/policies";
import { publicOrigin } from "../site";
import { sharingErrorResponse } from "./errors";
import { SHARING_PATH } from "./profile";
import {
  getShare,
  listAllTables,
  listSchemas,
  listShares,
  listTablesInSchema,
  queryTable,
  tableChanges,
  tableMetadata,
  tableVersion,
  type SharingHandler,
} from "./protocol";

/** Where the Delta Sharing server is: the `endpoint` of a sharing profile. */
export const SHARING_PATH_PATTERN = /^\/api\/delta-sharing(?:\/|$)/;

/** The largest query body read (the protocol's are a few hundred bytes of hints). */
const MAX_BODY_BYTES = 64 * 1024;

const SEGMENT = "([^/]+)";
const TABLE = `/shares/${SEGMENT}/schemas/${SEGMENT}/tables/${SEGMENT}`;
const ROUTES: { method: "GET" | "POST" | "HEAD"; pattern: RegExp; names: string[]; handler: SharingHandler }[] = [
  { method: "GET", pattern: /^\/shares$/, names: [], handler: listShares },
  { method: "GET", pattern: new RegExp(`^/shares/${SEGMENT}$`), names: ["share"], handler: getShare },
  { method: "GET", pattern: new RegExp(`^/shares/${SEGMENT}/schemas$`), names: ["share"], handler: listSchemas },
  { method: "GET", pattern: new RegExp(`^/shares/${SEGMENT}/all-tables$`), names: ["share"], handler: listAllTables },
  {
    method: "GET",
    pattern: new RegExp(`^/shares/${SEGMENT}/schemas/${SEGMENT}/tables$`),
    names: ["share", "schema"],
    handler: listTablesInSchema,
  },
  // The protocol's older form of the version query: HEAD on the table itself.
  { method: "HEAD", pattern: new RegExp(`^${TABLE}$`), names: ["share", "schema", "table"], handler: tableVersion },
  {
    method: "GET",
    pattern: new RegExp(`^${TABLE}/version$`),
    names: ["share", "schema", "table"],
    handler: tableVersion,
  },
  {
    method: "GET",
    pattern: new RegExp(`^${TABLE}/metadata$`),
    names: ["share", "schema", "table"],
    handler: tableMetadata,
  },
  { method: "POST", pattern: new RegExp(`^${TABLE}/query$`), names: ["share", "schema", "table"], handler: queryTable },
  {
    method: "GET",
    pattern: new RegExp(`^${TABLE}/changes$`),
    names: ["share", "schema", "table"],
    handler: tableChanges,
  },
];

/**
 * Serves a request under /api/delta-sharing. Every one goes through the same checks as /api/v1
 * (lib/api/route.ts): the key (expiry, revocation, retirement), the datasets:read permission,
 * failed authentications counted against the client's address, the account's 60/minute shared
 * with /api/v1, usage counted per key; then the handler, and errors in the protocol's shape.
 */
export async function serveDeltaSharing(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = requestIdFrom(req.headers["x-request-id"]);
  const [rawPath = "", rawSearch = ""] = (req.url ?? "").split("?", 2);
  let limitHeaders: Record<string, string> = {};
  let keyId: string | undefined;
  let response: Response;
  try {
    const { handler, params } = route(req.method ?? "", rawPath.slice(SHARING_PATH.length));
    const headers = webHeaders(req);
    const key = await authFailures().authenticate(clientIp(req), () =>
      authenticateApiKey(headers.get("authorization")),
    );
    keyId = key.keyId;
    annotateRequest(req, { buyerId: key.buyerId });
    if (key.permission !== "datasets:read") {
      throw new AppError(
        "insufficient_permission",
        `Delta Sharing needs a key with the datasets:read permission; this key has ${key.permission}.`,
      );
    }
    limitHeaders = await enforceRatePolicy(DATASETS_POLICY, key.buyerId);
    const body = req.method === "POST" ? await jsonBody(req) : undefined;
    const origin = publicOrigin({ headers, url: "http://localhost/" });
    response = await handler({
      buyerId: key.buyerId,
      params,
      search: new URLSearchParams(rawSearch),
      headers,
      body,
      origin,
    });
    for (const [name, value] of Object.entries(limitHeaders)) response.headers.set(name, value);
    response.headers.set("X-Request-Id", requestId);
  } catch (error) {
    response = sharingErrorResponse(error, requestId, limitHeaders);
  }
  if (keyId) countKeyUse(keyId, response.status);
  // A HEAD answer carries the headers GET would, never a body.
  if (req.method === "HEAD" && response.body) response = new Response(null, response);
  await sendResponse(res, response);
}

/** The handler and path parameters for a method and path (below /api/delta-sharing). */
function route(method: string, path: string): { handler: SharingHandler; params: Record<string, string> } {
  const allowed: string[] = [];
  for (const candidate of ROUTES) {
    const match = candidate.pattern.exec(path);
    if (!match) continue;
    const params = Object.fromEntries(candidate.names.map((name, index) => [name, decodeSegment(match[index + 1]!)]));
    // GET routes answer HEAD too (headers only).
    if (candidate.method === method || (method === "HEAD" && candidate.method === "GET")) {
      return { handler: candidate.handler, params };
    }
    allowed.push(candidate.method);
  }
  if (allowed.length) {
    const allow = [...new Set(allowed.flatMap((one) => (one === "GET" ? ["GET", "HEAD"] : [one])))].join(", ");
    throw new AppError("method_not_allowed", `${method} is not allowed here. Allowed: ${allow}.`, { Allow: allow });
  }
  throw new AppError(
    "sharing_not_found",
    `There is no Delta Sharing endpoint at ${SHARING_PATH}${printablePath(path)}.`,
  );
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new AppError("sharing_malformed_request", "The request path has an invalid percent-encoding.");
  }
}

const printablePath = (path: string) => path.replace(/[^\x21-\x7e]/g, "?").slice(0, 200);

/** The query's JSON body: empty means `{}`; over 64 KiB, or not a JSON object, is refused. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new AppError("sharing_malformed_request", `The request body is over ${MAX_BODY_BYTES / 1024} KiB.`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8").trim();
  if (!text) return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AppError("sharing_malformed_request", "The request body is not valid JSON.");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new AppError("sharing_malformed_request", "The request body must be a JSON object.");
  }
  return body;
}
