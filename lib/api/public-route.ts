import { readOnlyNodeRoute, type WebHandler } from "../http/node";
import { problemResponse } from "../http/problem";

/** A public, read-only /api/v1 route (no key): the OpenAPI document. */
export function publicApiRoute(
  handler: (context: Parameters<WebHandler>[1] & { request: Parameters<WebHandler>[0] }) => Promise<Response>,
) {
  return readOnlyNodeRoute(async (request, context) => {
    try {
      const response = await handler({ ...context, request });
      response.headers.set("X-Request-Id", context.requestId);
      return response;
    } catch (error) {
      return problemResponse(error, context.requestId);
    }
  });
}
