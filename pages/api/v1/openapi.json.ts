import { readOnlyApiRoute } from "@/lib/api/node";
import { buildOpenApiDocument } from "@/lib/api/openapi";
import { publicOrigin } from "@/lib/api/validation";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** The OpenAPI 3.1 document, public: it describes the API, not anybody's data. */
export default readOnlyApiRoute(async (request) =>
  Response.json(buildOpenApiDocument(`${publicOrigin(request)}/api/v1`), {
    headers: { "Cache-Control": "public, max-age=300" },
  }),
);
