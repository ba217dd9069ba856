import { AppError } from "../errors";
import type { ApiKeyPermission } from "../keys";
import { authenticateApiKey, type AuthenticatedKey } from "../keys/verify";
import { createRateLimiter, rateLimitHeaders, type RateLimiter } from "../ratelimit";
import { problemResponse } from "./problem";
import { requestIdFrom } from "./request-id";

/** The dataset limit: 60 requests per minute per buyer account, shared by all its datasets:read keys. */
export const DATASETS_RATE_LIMIT = { limit: 60, windowSeconds: 60 } as const;

// One limiter per process, on globalThis: every API route is bundled on its own, and a
// module-level one would give each endpoint a limit of its own.
const shared = globalThis as unknown as { datasetsLimiter?: RateLimiter };
const datasetsRateLimiter = () =>
  (shared.datasetsLimiter ??= createRateLimiter({ prefix: "ratelimit:datasets", ...DATASETS_RATE_LIMIT }));

/** Accounts exempt from the dataset limit (benchmarks, internal tools): RATE_LIMIT_EXEMPT_BUYERS=id,id */
function isExempt(buyerId: string): boolean {
  return (process.env.RATE_LIMIT_EXEMPT_BUYERS ?? "").split(",").includes(buyerId);
}

export type ApiContext<Params> = { request: Request; requestId: string; key: AuthenticatedKey; params: Params };
type RouteContext<Params> = { params: Promise<Params> };

/**
 * Every /api/v1 handler goes through this: request id, key lookup (expiry, revocation),
 * permission, rate limit and its headers, and error mapping to problem+json. Requests refused
 * before the rate limit (401, 403) are not counted against any account.
 */
export function withApiKey<Params = Record<string, never>>(
  handler: (context: ApiContext<Params>) => Promise<Response>,
  options: { permission: ApiKeyPermission },
): (request: Request, context: RouteContext<Params>) => Promise<Response> {
  return async (request, context) => {
    const requestId = requestIdFrom(request);
    let limitHeaders: Record<string, string> = {};
    try {
      const key = await authenticateApiKey(request.headers.get("authorization"));
      if (key.permission !== options.permission) {
        throw new AppError(
          "insufficient_permission",
          `This endpoint needs a key with the ${options.permission} permission; this key has ${key.permission}.`,
        );
      }
      if (!isExempt(key.buyerId)) {
        const decision = await datasetsRateLimiter().check(key.buyerId);
        limitHeaders = rateLimitHeaders(decision, DATASETS_RATE_LIMIT.windowSeconds, "datasets");
        if (!decision.allowed) {
          throw new AppError(
            "rate_limited",
            `This account made more than ${DATASETS_RATE_LIMIT.limit} requests in the last minute (all its dataset keys together). Retry after ${decision.retryAfterSeconds} seconds.`,
          );
        }
      }
      const response = await handler({ request, requestId, key, params: await context.params });
      for (const [name, value] of Object.entries(limitHeaders)) response.headers.set(name, value);
      response.headers.set("X-Request-Id", requestId);
      return response;
    } catch (error) {
      return problemResponse(error, requestId, limitHeaders);
    }
  };
}

/** JSON for API clients (already serialised, e.g. by the database): never cached by shared caches. */
export function apiJson(json: string): Response {
  return new Response(json, {
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "private, no-store" },
  });
}

/** The API is read-only: any other method gets 405 with Allow. */
export async function methodNotAllowed(request: Request): Promise<Response> {
  const allow = "GET, HEAD";
  return problemResponse(
    new AppError("method_not_allowed", `${request.method} is not allowed: this API is read-only. Allowed: ${allow}.`),
    requestIdFrom(request),
    { Allow: allow },
  );
}
