import { buildOpenApiDocument } from "@/lib/api/openapi";
import { publicApiRoute } from "@/lib/api/public-route";
import { configuredOrigin, publicOrigin, trustsProxy } from "@/lib/site";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** The OpenAPI 3.1 document, public: it describes the API, not anybody's data. */
export default publicApiRoute(async (request) => {
  const headers = new Headers({ "Cache-Control": "public, max-age=300" });
  // Its `servers` URL follows the host asked for unless APP_URL fixes it: caches must keep one copy per host.
  if (!configuredOrigin()) headers.set("Vary", trustsProxy() ? "Host, X-Forwarded-Host, X-Forwarded-Proto" : "Host");
  return Response.json(buildOpenApiDocument(`${publicOrigin(request)}/api/v1`), { headers });
});
