import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../errors";
import { annotateRequest } from "../observability";
import { sendResponse, type NodeRoute, type RouteRequest } from "../http/node";
import { problemResponse } from "../http/problem";
import { publicApiRoute } from "./public-route";
import { requestIdFrom } from "../request-id";
import { apiRoute } from "./pipeline";
import { compileRouteTable } from "../http/route-table";
import type { ApiRoute } from "./route-spec";
import { API_ROUTES } from "./routes";
import { parseQuery } from "./validation";

/** Where the API is. */
export const API_V1_BASE = "/api/v1";
export const API_V1_PATH = /^\/api\/v1(?:\/|$)/;

/** An entry of the table as a Node route: its pipeline (keyed or public) around its handler. */
function nodeRouteOf(entry: ApiRoute): NodeRoute {
  const { query: schema, handler } = entry;
  const noQuery = () => ({});
  const withQuery = <Context extends { request: RouteRequest }>(context: Context) =>
    handler({ ...context, query: schema ? () => parseQuery(schema, context.request) : noQuery });
  return entry.permission === "public"
    ? publicApiRoute(withQuery)
    : apiRoute({ permission: entry.permission, keyInFirstRead: entry.keyInFirstRead }, withQuery);
}

const match = compileRouteTable(
  API_V1_BASE,
  API_ROUTES.map((entry) => ({ path: entry.path, name: API_V1_BASE + entry.path, serve: nodeRouteOf(entry) })),
);

/**
 * Serves a request under /api/v1 from the route table (lib/api/routes.ts), in production (from
 * scripts/http-server.ts, past Next.js: its request handling cost about 40% of the server's CPU
 * per API request, bench/api-accounts.ts) and in development (from the one catch-all
 * pages/api/v1/[[...path]].ts, so that code reloads on change): both route the same way. A path
 * not in the table gets the API's own 404, whatever the method.
 */
export function serveApiV1(req: IncomingMessage, res: ServerResponse, path = pathOf(req.url)): Promise<void> {
  let found: ReturnType<typeof match>;
  try {
    found = match(path);
    if (!found) throw unknownPath(path);
    annotateRequest(req, { route: found.route.name });
  } catch (error) {
    return sendResponse(res, problemResponse(error, requestIdFrom(req.headers["x-request-id"])));
  }
  return found.route.serve(req, res, found.params);
}

function pathOf(url: string | undefined): string {
  return (url ?? "/").split("?", 1)[0]!;
}

function unknownPath(path: string): AppError {
  return new AppError(
    "not_found",
    `There is no ${path.length <= 200 ? path : "such path"} in the API. See /api/v1/openapi.json.`,
  );
}
