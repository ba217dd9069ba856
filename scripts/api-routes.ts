import type { IncomingMessage, ServerResponse } from "node:http";
import type { NextApiRequest } from "next";
import { serveOpenApiDocument } from "../lib/api/openapi-route";
import unknownApiPath from "../pages/api/v1/[[...unknown]]";
import downloadFile from "../pages/api/v1/orders/[id]/files/[fileId]/index";
import filePreview from "../pages/api/v1/orders/[id]/files/[fileId]/preview";
import getOrder from "../pages/api/v1/orders/[id]/index";
import listOrders from "../pages/api/v1/orders/index";
import socialProfile from "../pages/api/v1/scrape/[platform]/profile";

type Handler = (req: NextApiRequest, res: ServerResponse) => unknown;

/**
 * The production server's routes for /api/v1, dispatched here rather than by Next.js: the same
 * Pages Router handlers (pages/api/v1), called with the `req.query` Next.js would give them (path
 * parameters over query parameters of the same name). Next.js's request handling cost about 40% of
 * the server's CPU per API request (bench/api-accounts.ts, profiled). `npm run dev` leaves the API
 * to Next.js, so that its code reloads on change.
 */
const ROUTES: [RegExp, string[], Handler][] = [
  [/^\/api\/v1\/orders$/, [], listOrders as Handler],
  [/^\/api\/v1\/orders\/([^/]+)$/, ["id"], getOrder as Handler],
  [/^\/api\/v1\/orders\/([^/]+)\/files\/([^/]+)$/, ["id", "fileId"], downloadFile as Handler],
  [/^\/api\/v1\/orders\/([^/]+)\/files\/([^/]+)\/preview$/, ["id", "fileId"], filePreview as Handler],
  [/^\/api\/v1\/scrape\/([^/]+)\/profile$/, ["platform"], socialProfile as Handler],
  [/^\/api\/v1\/openapi\.json$/, [], serveOpenApiDocument as Handler],
];

export const API_V1_PATH = /^\/api\/v1(?:\/|$)/;

/** Serves an /api/v1 request (any path under it: unknown ones get the API's own 404). */
export function serveApiV1(req: IncomingMessage, res: ServerResponse, path: string): unknown {
  const query: NextApiRequest["query"] = {};
  for (const [name, value] of new URLSearchParams((req.url ?? "").split("?")[1] ?? "")) {
    const previous = query[name];
    query[name] = previous === undefined ? value : [previous, value].flat();
  }
  for (const [pattern, names, handler] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    names.forEach((name, index) => (query[name] = decodeURIComponent(match[index + 1]!)));
    return handler(Object.assign(req, { query }) as NextApiRequest, res);
  }
  return (unknownApiPath as Handler)(Object.assign(req, { query }) as NextApiRequest, res);
}
