import { AppError } from "../errors";
import { anyMethodNodeRoute, readOnlyNodeRoute, type RouteRequest } from "./node";
import { problemResponse } from "./problem";

/** The /api/v1 routes that need no key. Apart from lib/api/route.ts, so that they load no database client. */

/** A public, read-only /api/v1 route (no key): the OpenAPI document. */
export function publicApiRoute(handler: (request: RouteRequest) => Promise<Response>) {
  return readOnlyNodeRoute(async (request, { requestId }) => {
    try {
      const response = await handler(request);
      response.headers.set("X-Request-Id", requestId);
      return response;
    } catch (error) {
      return problemResponse(error, requestId);
    }
  });
}

/** Any other path under /api/v1, whatever the method: a problem+json 404 rather than an HTML page. */
export const unknownApiPath = anyMethodNodeRoute((path, requestId) =>
  problemResponse(
    new AppError(
      "not_found",
      `There is no ${path.length <= 200 ? path : "such path"} in the API. See /api/v1/openapi.json.`,
    ),
    requestId,
  ),
);
