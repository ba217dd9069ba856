import { AppError } from "../errors";
import type { ApiKeyPermission } from "../keys";
import { authenticateApiKey, type AuthenticatedKey } from "../keys/verify";
import { createRateLimiter, rateLimitHeaders, type RateLimiter } from "../ratelimit";
import { socialAccessFor, type SocialAccessSettings } from "../social/access";
import { problemResponse } from "./problem";
import { requestIdFrom } from "./request-id";

/** The dataset limit: 60 requests per minute per buyer account, shared by all its datasets:read keys. */
export const DATASETS_RATE_LIMIT = { limit: 60, windowSeconds: 60 } as const;

// Limiters live on globalThis, one per process: every API route is bundled on its own, and
// module-level ones would give each endpoint a limit of its own.
const shared = globalThis as unknown as { datasetsLimiter?: RateLimiter; socialLimiters?: Map<number, RateLimiter> };

type RatePolicy = { name: string; limit: number; windowSeconds: number; limiter: () => RateLimiter };

const DATASETS_POLICY: RatePolicy = {
  name: "datasets",
  ...DATASETS_RATE_LIMIT,
  limiter: () =>
    (shared.datasetsLimiter ??= createRateLimiter({ prefix: "ratelimit:datasets", ...DATASETS_RATE_LIMIT })),
};

/**
 * The social rate is set per account, so there is one limiter per configured rate (the limit is
 * part of a sliding window's identity); a changed rate starts counting afresh.
 */
function socialPolicy(ratePerMinute: number): RatePolicy {
  return {
    name: "social",
    limit: ratePerMinute,
    windowSeconds: 60,
    limiter: () => {
      const limiters = (shared.socialLimiters ??= new Map());
      let limiter = limiters.get(ratePerMinute);
      if (!limiter) {
        limiter = createRateLimiter({
          prefix: `ratelimit:social:${ratePerMinute}`,
          limit: ratePerMinute,
          windowSeconds: 60,
        });
        limiters.set(ratePerMinute, limiter);
      }
      return limiter;
    },
  };
}

/** Accounts exempt from the dataset limit, not the social rate (benchmarks, internal tools): RATE_LIMIT_EXEMPT_BUYERS=id,id */
function isExempt(buyerId: string): boolean {
  return (process.env.RATE_LIMIT_EXEMPT_BUYERS ?? "").split(",").includes(buyerId);
}

export type ApiContext<Params> = {
  request: Request;
  requestId: string;
  key: AuthenticatedKey;
  params: Params;
  /** The account's Social API settings, for `scrape:read` endpoints (checked to be enabled). */
  social?: SocialAccessSettings;
};
type RouteContext<Params> = { params: Promise<Params> };

/**
 * Every /api/v1 handler goes through this: request id, key lookup (expiry, revocation),
 * permission, Social API access (scrape:read), rate limit and its headers, and error mapping to
 * problem+json. Requests refused before the rate limit (401, 403) are not counted against any
 * account. Dataset keys share the account's 60/minute; social keys have the account's own rate.
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
      let policy = DATASETS_POLICY;
      let social: SocialAccessSettings | undefined;
      if (key.permission === "scrape:read") {
        social = await socialAccessFor(key.buyerId);
        if (!social?.enabled) {
          throw new AppError(
            "social_access_disabled",
            "Social API access is not enabled for this account. Ask your account manager to enable it.",
          );
        }
        policy = socialPolicy(social.ratePerMinute);
      }
      if (!(policy === DATASETS_POLICY && isExempt(key.buyerId))) {
        const decision = await policy.limiter().check(key.buyerId);
        limitHeaders = rateLimitHeaders(decision, policy.windowSeconds, policy.name);
        if (!decision.allowed) {
          const scope = policy === DATASETS_POLICY ? "all its dataset keys together" : "its social rate";
          throw new AppError(
            "rate_limited",
            `This account made more than ${policy.limit} requests in the last minute (${scope}). Retry after ${decision.retryAfterSeconds} seconds.`,
          );
        }
      }
      const response = await handler({ request, requestId, key, params: await context.params, social });
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
