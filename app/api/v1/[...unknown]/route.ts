import { problemResponse } from "@/lib/api/problem";
import { requestIdFrom } from "@/lib/api/request-id";
import { AppError } from "@/lib/errors";

export const dynamic = "force-dynamic";

/** Any other path under /api/v1: a problem+json 404 rather than an HTML page. */
function notFound(request: Request): Response {
  const path = new URL(request.url).pathname;
  return problemResponse(
    new AppError("not_found", `There is no ${path} in the API. See /api/v1/openapi.json for the endpoints.`),
    requestIdFrom(request),
  );
}

export { notFound as GET, notFound as HEAD, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE };
