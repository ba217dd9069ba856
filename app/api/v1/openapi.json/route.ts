import { buildOpenApiDocument } from "@/lib/api/openapi";
import { publicOrigin } from "@/lib/api/validation";
import { methodNotAllowed } from "@/lib/api/with-api-key";

export const dynamic = "force-dynamic";

/** The OpenAPI 3.1 document, public: it describes the API, not anybody's data. */
export function GET(request: Request) {
  return Response.json(buildOpenApiDocument(`${publicOrigin(request)}/api/v1`), {
    headers: { "Cache-Control": "public, max-age=300" },
  });
}
export const HEAD = GET;
export { methodNotAllowed as POST, methodNotAllowed as PUT, methodNotAllowed as PATCH, methodNotAllowed as DELETE };
