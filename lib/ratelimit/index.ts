/**
 * Rate limiting with @upstash/ratelimit's sliding window (docs/api.md, Rate limit: 60 requests per minute per
 * buyer account). The store comes from the environment: Upstash REST when UPSTASH_REDIS_REST_URL and
 * UPSTASH_REDIS_REST_TOKEN are set, else a plain Redis when REDIS_URL is set (ioredis behind a small adapter); both
 * run the library's own scripts, with its ephemeral cache, so an account already refused is refused again without a
 * round trip until the reset its Retry-After named. Neither set: the in-process store of a single instance
 * (./sliding-window.ts), the same decisions computed in JavaScript. Create a limiter once per process, not per
 * request: each opens its connection. Limiters with the same prefix share their counts within a process, whichever
 * bundle created them.
 *
 * When the shared store is unreachable (decision): a request must never hang or fail because of the limiter. Each
 * check gets REMOTE_DEADLINE_MS; on an error or timeout it is answered by the in-process store with the same limit,
 * so the limit is still enforced, per instance instead of shared. A warning is logged at most once per
 * WARNING_INTERVAL_MS. The shared store is tried again on the next check and used as soon as it answers; while it is
 * failing only one check at a time waits for it, the others go straight to the fallback. Counts made during the
 * outage are not carried over, and a check that timed out may still have counted in the store.
 * (The library's own `timeout` option would let such requests through unlimited, so it is off.)
 */
import { Ratelimit } from "@upstash/ratelimit";
import { remoteBackend, type Env, type RatelimitRedis } from "./backends";
import { ExpiringBlockCache, InProcessSlidingWindow, type SlidingWindowResult } from "./sliding-window";
import { logger } from "../log";
import { countRateLimitFallback } from "../metrics";
import { processSingleton } from "../singleton";
import type { RateLimitDecision } from "./decision";

export { rateLimitHeaders } from "./headers";
export type { RateLimitDecision } from "./decision";

export type RateLimiter = {
  check(identifier: string): Promise<RateLimitDecision>;
  /** Gives back one counted request (a query refused as too_many_queries counts toward no limit). */
  refund(identifier: string): Promise<void>;
};

export type RateLimitOptions = { prefix: string; limit: number; windowSeconds: number };

/** The shared store's deadline per check; past it the in-process store answers (see above). */
export const REMOTE_DEADLINE_MS = 1000;
const WARNING_INTERVAL_MS = 30_000;

/** `env` defaults to process.env; tests pass their own to pick a backend. */
export function createRateLimiter(options: RateLimitOptions, { env = process.env }: { env?: Env } = {}): RateLimiter {
  for (const field of ["limit", "windowSeconds"] as const) {
    if (!Number.isInteger(options[field]) || options[field] < 1) {
      throw new RangeError(`Rate limit ${field} must be a positive integer, got ${options[field]}`);
    }
  }
  const { prefix, limit, windowSeconds } = options;
  const local = processSingleton(
    `ratelimit:in-process:${prefix}:${limit}/${windowSeconds}s`,
    () => new InProcessSlidingWindow(limit, windowSeconds * 1000),
  );
  const backend = remoteBackend(env);
  if (!backend) {
    return { check: async (identifier) => toDecision(local.check(identifier)), refund: async (id) => local.refund(id) };
  }

  const { label, connect } = backend;
  let remote: Ratelimit | undefined;
  let failing = false;
  let probing = false;
  let lastWarningAt = -Infinity;

  async function remoteDecision(identifier: string): Promise<RateLimitDecision | undefined> {
    try {
      remote ??= slidingWindow(connect(), options);
      const result = await withDeadline(remote.limit(identifier), REMOTE_DEADLINE_MS);
      if (failing) logger().info(`Rate limiter: ${label} answers again; limits are shared again.`);
      failing = false;
      return toDecision(result);
    } catch (error) {
      failing = true;
      countRateLimitFallback(backend!.kind);
      if (Date.now() - lastWarningAt >= WARNING_INTERVAL_MS) {
        lastWarningAt = Date.now();
        logger().warn(
          `Rate limiter: ${label} unavailable (${(error as Error).message}); limiting per instance until it answers.`,
        );
      }
      return undefined;
    }
  }

  return {
    async refund(identifier) {
      // The store's own refund (a negative rate); the in-process count, if that is what counted it.
      if (failing || !remote) return local.refund(identifier);
      await withDeadline(remote.limit(identifier, { rate: -1 }), REMOTE_DEADLINE_MS).catch(() =>
        local.refund(identifier),
      );
    },
    async check(identifier) {
      // While the store is failing, one check at a time probes it and the others answer at once from the fallback.
      if (!failing || !probing) {
        const probe = failing;
        probing ||= probe;
        try {
          const decision = await remoteDecision(identifier);
          if (decision) return decision;
        } finally {
          if (probe) probing = false;
        }
      }
      return toDecision(local.check(identifier));
    },
  };
}

function slidingWindow(redis: RatelimitRedis, { prefix, limit, windowSeconds }: RateLimitOptions): Ratelimit {
  return new Ratelimit({
    redis,
    prefix,
    limiter: Ratelimit.slidingWindow(limit, `${windowSeconds} s`),
    // Our deadline and fallback replace it (see the top of this file).
    timeout: 0,
    // A refused identifier is refused in process until its reset; shared by the limiters of one prefix.
    ephemeralCache: processSingleton(`ratelimit:blocked:${prefix}`, () => new ExpiringBlockCache()),
  });
}

function toDecision(result: SlidingWindowResult): RateLimitDecision {
  return {
    allowed: result.success,
    limit: result.limit,
    remaining: result.remaining,
    resetAt: result.reset,
    retryAfterSeconds: result.success ? 0 : Math.max(1, Math.ceil((result.reset - Date.now()) / 1000)),
  };
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
