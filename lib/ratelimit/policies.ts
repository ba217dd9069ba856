import { DATASETS_RATE_LIMIT } from "../contract";
import { AppError } from "../errors";
import { countRateLimitDecision } from "../metrics";
import { processSingleton } from "../singleton";
import { rateLimitHeaders } from "./headers";
import { createRateLimiter, type RateLimiter } from "./index";
import { formatSeconds } from "../format";

/**
 * The API's rate policies: what is counted, against which limit, and how a refusal reads. Limiters
 * are made once per process (see processSingleton) and shared by every route.
 */
export type RatePolicy = {
  /** The policy's name in the RateLimit headers. */
  name: string;
  limit: number;
  windowSeconds: number;
  /** What the limit covers, for the refusal's message. */
  scope: string;
  limiter: () => RateLimiter;
  /** Accounts this policy does not count. */
  exempt?: (buyerId: string) => boolean;
};

/** The dataset limit: 60 requests per minute per buyer account, shared by all its datasets:read keys. */
export const DATASETS_POLICY: RatePolicy = {
  name: "datasets",
  ...DATASETS_RATE_LIMIT,
  scope: "all its dataset keys together",
  limiter: () =>
    processSingleton("ratelimit:datasets", () =>
      createRateLimiter({ prefix: "ratelimit:datasets", ...DATASETS_RATE_LIMIT }),
    ),
  exempt: (buyerId) => exemptBuyers().has(buyerId),
};

/**
 * The social rate is set per account, so there is one limiter per configured rate (the limit is
 * part of a sliding window's identity); a changed rate starts counting afresh.
 */
export function socialPolicy(ratePerMinute: number): RatePolicy {
  const prefix = `ratelimit:social:${ratePerMinute}`;
  return {
    name: "social",
    limit: ratePerMinute,
    windowSeconds: 60,
    scope: "its social rate",
    limiter: () =>
      processSingleton(prefix, () => createRateLimiter({ prefix, limit: ratePerMinute, windowSeconds: 60 })),
  };
}

/**
 * Counts one request of `buyerId` under `policy`. Returns the RateLimit headers for the response
 * (none for an exempt account); over the limit, throws rate_limited carrying them and Retry-After.
 */
export async function enforceRatePolicy(policy: RatePolicy, buyerId: string): Promise<Record<string, string>> {
  if (policy.exempt?.(buyerId)) return {};
  const decision = await policy.limiter().check(buyerId);
  countRateLimitDecision(policy.name, decision.allowed);
  const headers = rateLimitHeaders(decision, policy.windowSeconds, policy.name);
  if (!decision.allowed) {
    throw new AppError(
      "rate_limited",
      `This account made more than ${policy.limit} requests in the last minute (${policy.scope}). Retry after ${formatSeconds(decision.retryAfterSeconds)}.`,
      headers,
    );
  }
  return headers;
}

/** Gives back the request just counted for `buyerId` under `policy` (a query refused as too_many_queries). */
export async function refundRatePolicy(policy: RatePolicy, buyerId: string): Promise<void> {
  if (policy.exempt?.(buyerId)) return;
  await policy.limiter().refund(buyerId);
}

/** Accounts exempt from the dataset limit, not the social rate (benchmarks, internal tools): RATE_LIMIT_EXEMPT_BUYERS=id,id */
function exemptBuyers(): ReadonlySet<string> {
  return processSingleton(
    "ratelimit:exempt-buyers",
    () => new Set((process.env.RATE_LIMIT_EXEMPT_BUYERS ?? "").split(",").filter(Boolean)),
  );
}
