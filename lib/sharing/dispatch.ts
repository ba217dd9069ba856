import type { IncomingMessage, ServerResponse } from "node:http";
import { sendResponse, webHeaders } from "../http/node";
import { requestIdFrom } from "../request-id";
import { compileRouteTable } from "../http/route-table";
import { AppError } from "../errors";
import { keyedRequest } from "../http/keyed-request";
import { readBodyWithin } from "../http/request-body";
import { annotateRequest } from "../observability";
import { publicOrigin } from "../site";
import { sharingErrorResponse } from "./errors";
import { SHARING_PATH } from "./profile";
import type { SharingHandler } from "./protocol";
import {
  getShare,
  listAllTables,
  listSchemas,
  listShares,
  listTablesInSchema,
  tableMetadata,
  tableVersion,
} from "./protocol-catalog";
import { tableChanges } from "./protocol-changes";
import { queryTable } from "./protocol-query";

/** Where the Delta Sharing server is: the `endpoint` of a sharing profile. */
export const SHARING_PATH_PATTERN = /^\/api\/delta-sharing(?:\/|$)/;

/** The largest query body read (the protocol's are a few hundred bytes of hints). */
const MAX_BODY_BYTES = 64 * 1024;

const TABLE = "/shares/{share}/schemas/{schema}/tables/{table}";
/** The protocol's endpoints below SHARING_PATH; their templates name requests in logs and metrics. */
export const SHARING_ROUTES: { method: "GET" | "POST" | "HEAD"; path: string; handler: SharingHandler }[] = [
  { method: "GET", path: "/shares", handler: listShares },
  { method: "GET", path: "/shares/{share}", handler: getShare },
  { method: "GET", path: "/shares/{share}/schemas", handler: listSchemas },
  { method: "GET", path: "/shares/{share}/all-tables", handler: listAllTables },
  { method: "GET", path: "/shares/{share}/schemas/{schema}/tables", handler: listTablesInSchema },
  // The protocol's older form of the version query: HEAD on the table itself.
  { method: "HEAD", path: TABLE, handler: tableVersion },
  { method: "GET", path: `${TABLE}/version`, handler: tableVersion },
  { method: "GET", path: `${TABLE}/metadata`, handler: tableMetadata },
  { method: "POST", path: `${TABLE}/query`, handler: queryTable },
  { method: "GET", path: `${TABLE}/changes`, handler: tableChanges },
];

const match = compileRouteTable(
  "",
  SHARING_ROUTES,
  () => new AppError("sharing_malformed_request", "The request path has an invalid percent-encoding."),
);

/**
 * Serves a request under /api/delta-sharing: the route first (an unknown path or a method it does
 * not take is refused before the key), then the keyed-request pipeline it shares with /api/v1
 * (lib/http/keyed-request.ts: the key, the datasets:read permission, failed authentications
 * counted against the client's address, the account's 60/minute shared with /api/v1, usage
 * counted per key), the handler, and errors in the protocol's shape.
 */
export async function serveDeltaSharing(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const requestId = requestIdFrom(req.headers["x-request-id"]);
  const [rawPath = "", rawSearch = ""] = (req.url ?? "").split("?", 2);
  let response: Response;
  try {
    const { handler, params, name } = route(req.method ?? "", rawPath.slice(SHARING_PATH.length));
    annotateRequest(req, { route: name });
    response = await keyedRequest({
      incoming: req,
      requestId,
      permission: "datasets:read",
      surface: "Delta Sharing",
      renderError: sharingErrorResponse,
      handle: async ({ key }) => {
        const headers = webHeaders(req);
        const body = req.method === "POST" ? await jsonBody(req) : undefined;
        const origin = publicOrigin({ headers, url: "http://localhost/" });
        return handler({ buyerId: key.buyerId, params, search: new URLSearchParams(rawSearch), headers, body, origin });
      },
    });
  } catch (error) {
    response = sharingErrorResponse(error, requestId);
  }
  // A HEAD answer carries the headers GET would, never a body.
  if (req.method === "HEAD" && response.body) response = new Response(null, response);
  await sendResponse(res, response);
}

/** The handler and path parameters for a method and path (below /api/delta-sharing). */
function route(
  method: string,
  path: string,
): { handler: SharingHandler; params: Record<string, string>; name: string } {
  const found = match(path);
  if (found) {
    const { route, params } = found;
    // GET routes answer HEAD too (headers only).
    if (route.method === method || (method === "HEAD" && route.method === "GET")) {
      return { handler: route.handler, params, name: SHARING_PATH + route.path };
    }
    const allow = route.method === "GET" ? "GET, HEAD" : route.method;
    throw new AppError("method_not_allowed", `${method} is not allowed here. Allowed: ${allow}.`, { Allow: allow });
  }
  throw new AppError(
    "sharing_not_found",
    `There is no Delta Sharing endpoint at ${SHARING_PATH}${printablePath(path)}.`,
  );
}

const printablePath = (path: string) => path.replace(/[^\x21-\x7e]/g, "?").slice(0, 200);

/** The query's JSON body: empty means `{}`; over 64 KiB, or not a JSON object, is refused. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const bytes = await readBodyWithin(req, MAX_BODY_BYTES);
  if (bytes === null) {
    throw new AppError("sharing_malformed_request", `The request body is over ${MAX_BODY_BYTES / 1024} KiB.`);
  }
  const text = bytes.toString("utf8").trim();
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
