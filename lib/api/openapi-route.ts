import { buildOpenApiDocument } from "./openapi";
import { publicApiRoute } from "./public-route";
import { configuredOrigin, publicOrigin, trustsProxy } from "../site";

/**
 * GET /api/v1/openapi.json, public: it describes the API, not anybody's data. A module of its own
 * (pages/api/v1/openapi.json.ts re-exports it) because a file named *.json.ts cannot be imported by
 * the production server's router (scripts/api-routes.ts).
 */
export const serveOpenApiDocument = publicApiRoute(async (request) => {
  const headers = new Headers({ "Cache-Control": "public, max-age=300" });
  // Its `servers` URL follows the host asked for unless APP_URL fixes it: caches must keep one copy per host.
  if (!configuredOrigin()) headers.set("Vary", trustsProxy() ? "Host, X-Forwarded-Host, X-Forwarded-Proto" : "Host");
  return Response.json(buildOpenApiDocument(`${publicOrigin(request)}/api/v1`), { headers });
});
