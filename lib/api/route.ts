import { clientIp } from "../auth/signin-limits";
import { AppError } from "../errors";
import type { ApiKeyPermission } from "../keys/permissions";
import { authenticateApiKey, type AuthenticatedKey } from "../keys/verify";
import { authFailures } from "../ratelimit/auth-failures";
import { DATASETS_POLICY, enforceRatePolicy, socialPolicy, type RatePolicy } from "../ratelimit/policies";
import { socialAccessFor, type SocialAccessSettings } from "../social/access";
import { readOnlyNodeRoute } from "./node";
import { countKeyUse } from "../keys/usage";
import { annotateRequest } from "../observability";
import { problemResponse } from "./problem";

export type ApiContext<Params> = {
  request: Request;
  requestId: string;
  key: AuthenticatedKey;
  params: Params;
  /** The account's Social API settings, for `scrape:read` endpoints (checked to be enabled). */
  social?: SocialAccessSettings;
};

/**
 * An /api/v1 route. Every one goes through this: method (405 for anything but GET/HEAD), request
 * id, key lookup (expiry, revocation), permission, Social API access (scrape:read), rate limit and
 * its headers, and error mapping to problem+json. Requests refused before the rate limit (401,
 * 403) count against no account; failed authentications count against the client's address
 * (lib/ratelimit/auth-failures.ts). Dataset keys share the account's 60/minute; social keys have the
 * account's own rate. The handler does its one job.
 */
export function apiRoute<Params extends Record<string, string> = Record<string, never>>(
  options: { permission: ApiKeyPermission },
  handler: (context: ApiContext<Params>) => Promise<Response>,
) {
  return readOnlyNodeRoute(async (request, { requestId, query, incoming }) => {
    let limitHeaders: Record<string, string> = {};
    let keyId: string | undefined;
    try {
      const key = await authFailures().authenticate(clientIp(incoming), () =>
        authenticateApiKey(request.headers.get("authorization")),
      );
      keyId = key.keyId;
      annotateRequest(incoming, { buyerId: key.buyerId });
      if (key.permission !== options.permission) {
        throw new AppError(
          "insufficient_permission",
          `This endpoint needs a key with the ${options.permission} permission; this key has ${key.permission}.`,
        );
      }
      let policy: RatePolicy = DATASETS_POLICY;
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
      limitHeaders = await enforceRatePolicy(policy, key.buyerId);
      // Dynamic segments win over query parameters of the same name in Next's req.query.
      const response = await handler({ request, requestId, key, params: query as Params, social });
      for (const [name, value] of Object.entries(limitHeaders)) response.headers.set(name, value);
      response.headers.set("X-Request-Id", requestId);
      countKeyUse(keyId, response.status);
      return response;
    } catch (error) {
      const response = problemResponse(error, requestId, limitHeaders);
      // Answers to a known key count toward its usage, refusals included; an unknown key has none.
      if (keyId) countKeyUse(keyId, response.status);
      return response;
    }
  });
}
