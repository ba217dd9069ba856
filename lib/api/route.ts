import { clientIp } from "../auth/signin-limits";
import { AppError } from "../errors";
import type { ApiKeyPermission } from "../keys/permissions";
import { isKeyRefusal, presentedKey, queryWithKey, verifyKey, type AuthenticatedKey } from "../keys/verify";
import type { QueryResultRow } from "pg";
import { sqlQuery, type SqlRunner } from "../db/client";
import { authFailures } from "../ratelimit/auth-failures";
import { DATASETS_POLICY, enforceRatePolicy, socialPolicy, type RatePolicy } from "../ratelimit/policies";
import { socialAccessFor, type SocialAccessSettings } from "../social/access";
import { readOnlyNodeRoute, type RouteRequest } from "./node";
import { countKeyUse } from "../keys/usage";
import { annotateRequest } from "../observability";
import { problemResponse } from "./problem";

export type ApiContext<Params> = {
  request: RouteRequest;
  requestId: string;
  key: AuthenticatedKey;
  params: Params;
  /** The account's Social API settings, for `scrape:read` endpoints (checked to be enabled). */
  social?: SocialAccessSettings;
  /**
   * Runs a read. In a `keyInFirstRead` route, the first one also checks the key, in the same
   * statement (lib/keys/verify.ts queryWithKey); later ones, and every one elsewhere, run alone.
   */
  sql: SqlRunner;
};

/**
 * An /api/v1 route. Every one goes through this: method (405 for anything but GET/HEAD), request
 * id, key lookup (expiry, revocation), permission, Social API access (scrape:read), rate limit and
 * its headers, and error mapping to problem+json. Requests refused before the rate limit (401,
 * 403) count against no account; failed authentications count against the client's address
 * (lib/ratelimit/auth-failures.ts). Dataset keys share the account's 60/minute; social keys have the
 * account's own rate. The handler does its one job.
 *
 * `keyInFirstRead`: the handler's first database work is a read through `context.sql`, and it
 * writes nothing before. A key this process accepted before (its owner and permission never
 * change) is then rate limited at once and checked in that read's statement: one round trip per
 * request, not two. Its validity is never taken from memory: a key refused there gets its 401,
 * and so does one whose handler failed or read nothing before its statement, as if it had been
 * checked first. Such a request, from a key revoked since its last one, counts once against its
 * account's limit; the process then forgets the key.
 */
export function apiRoute<Params extends Record<string, string> = Record<string, never>>(
  options: { permission: ApiKeyPermission; keyInFirstRead?: boolean },
  handler: (context: ApiContext<Params>) => Promise<Response>,
) {
  return readOnlyNodeRoute(async (request, { requestId, query, incoming }) => {
    let limitHeaders: Record<string, string> = {};
    let keyId: string | undefined;
    try {
      const response = await authFailures().authenticate(clientIp(incoming), async () => {
        const now = new Date();
        const presented = presentedKey(incoming.headers.authorization ?? null);
        const known = presented.known;
        const checkLater = options.keyInFirstRead === true && known?.permission === options.permission;
        const key = checkLater ? known : await verifyKey(presented, now);
        let unchecked = checkLater;
        // A key refused after all is answered as if refused first: no usage, no account limit headers.
        const refused = (error: unknown): never => {
          keyId = undefined;
          limitHeaders = {};
          throw error;
        };
        const verifyNow = () => verifyKey(presented, now).catch(refused);
        const sql: SqlRunner = async <Row extends QueryResultRow>(text: string, values: unknown[]) => {
          if (!unchecked) return sqlQuery<Row>(text, values);
          unchecked = false;
          try {
            return await queryWithKey<Row>({ ...presented, known: key }, text, values, now);
          } catch (error) {
            return isKeyRefusal(error) ? refused(error) : Promise.reject(error);
          }
        };
        keyId = key.keyId;
        annotateRequest(incoming, { buyerId: key.buyerId });
        try {
          const response = await checkedRequest(key);
          if (unchecked) await verifyNow();
          return response;
        } catch (error) {
          // The key's own refusal comes first, as when it is checked before anything else.
          if (unchecked) await verifyNow();
          throw error;
        }

        async function checkedRequest(key: AuthenticatedKey): Promise<Response> {
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
          return handler({ request, requestId, key, params: query as Params, social, sql });
        }
      });
      for (const [name, value] of Object.entries(limitHeaders)) response.headers.set(name, value);
      response.headers.set("X-Request-Id", requestId);
      countKeyUse(keyId!, response.status);
      return response;
    } catch (error) {
      const response = problemResponse(error, requestId, limitHeaders);
      // Answers to a known key count toward its usage, refusals included; an unknown key has none.
      if (keyId) countKeyUse(keyId, response.status);
      return response;
    }
  });
}
