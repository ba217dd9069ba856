import { randomUUID } from "node:crypto";
import { afterEach, expect, it, vi } from "vitest";
import { createRateLimiter, rateLimitHeaders, type RateLimiter } from "@/lib/ratelimit";
import type { Env } from "@/lib/ratelimit/backends";

export const LIMIT = 60;
export const WINDOW_SECONDS = 60;
const WINDOW_MS = WINDOW_SECONDS * 1000;

/** Every test counts under its own prefix, so runs against a shared Redis never see each other's counts. */
export const uniquePrefix = () => `test:ratelimit:${randomUUID()}`;

export const limiterFor = (env: Env, prefix = uniquePrefix()) =>
  createRateLimiter({ prefix, limit: LIMIT, windowSeconds: WINDOW_SECONDS }, { env });

/**
 * Freezes Date only (timers stay real, so deadlines still fire) at `msIntoWindow` of the current window, so a run
 * never straddles a window boundary and reset times are exact. Returns that window's start.
 */
export function freezeTime(msIntoWindow: number): number {
  const windowStart = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS;
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(windowStart + msIntoWindow);
  return windowStart;
}

export async function countAllowed(limiter: RateLimiter, identifier: string, checks: number): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < checks; i++) if ((await limiter.check(identifier)).allowed) allowed++;
  return allowed;
}

/** The contract's behaviour, run against whichever store `env` selects. */
export function slidingWindowBehaviour(env: () => Env) {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("allows 60 requests in a window, then refuses with Retry-After", async () => {
    const windowStart = freezeTime(10_000);
    const limiter = limiterFor(env());
    for (let i = 1; i <= LIMIT; i++) {
      expect(await limiter.check("buyer")).toEqual({
        allowed: true,
        limit: LIMIT,
        remaining: LIMIT - i,
        resetAt: windowStart + WINDOW_MS,
        retryAfterSeconds: 0,
      });
    }
    const refused = await limiter.check("buyer");
    expect(refused).toEqual({
      allowed: false,
      limit: LIMIT,
      remaining: 0,
      resetAt: windowStart + WINDOW_MS,
      retryAfterSeconds: 50,
    });
    expect(rateLimitHeaders(refused, WINDOW_SECONDS, "datasets")).toEqual({
      "RateLimit-Policy": '"datasets";q=60;w=60',
      RateLimit: '"datasets";r=0;t=50',
      "Retry-After": "50",
    });
  });

  it("counts each identifier on its own", async () => {
    freezeTime(10_000);
    const limiter = limiterFor(env());
    expect(await countAllowed(limiter, "buyer-a", LIMIT + 1)).toBe(LIMIT);
    expect(await limiter.check("buyer-b")).toMatchObject({ allowed: true, remaining: LIMIT - 1 });
  });

  it("slides: half-way through the next window, half of the previous window's requests still count", async () => {
    const windowStart = freezeTime(10_000);
    const limiter = limiterFor(env());
    expect(await countAllowed(limiter, "buyer", LIMIT)).toBe(LIMIT);
    vi.setSystemTime(windowStart + WINDOW_MS + WINDOW_MS / 2);
    expect(await countAllowed(limiter, "buyer", LIMIT)).toBe(LIMIT / 2);
  });
}
