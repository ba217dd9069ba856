import net from "node:net";
import { performance } from "node:perf_hooks";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { createRateLimiter, rateLimitHeaders, type RateLimitDecision, type RateLimiter } from "@/lib/ratelimit";
import { remoteBackend } from "@/lib/ratelimit/backends";
import { LIMIT, freezeTime, limiterFor, slidingWindowBehaviour } from "./helpers";
import type { Logger } from "pino";
import { logger } from "@/lib/log";

describe("in-process store (no Redis configured)", () => {
  slidingWindowBehaviour(() => ({}));
});

describe("rateLimitHeaders (draft-ietf-httpapi-ratelimit-headers-11)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("describes an allowed request", () => {
    freezeTime(0);
    const decision: RateLimitDecision = {
      allowed: true,
      limit: 60,
      remaining: 59,
      resetAt: Date.now() + 30_000,
      retryAfterSeconds: 0,
    };
    expect(rateLimitHeaders(decision, 60, "datasets")).toEqual({
      "RateLimit-Policy": '"datasets";q=60;w=60',
      RateLimit: '"datasets";r=59;t=30',
    });
    expect(rateLimitHeaders(decision, 60)).toEqual({
      "RateLimit-Policy": '"default";q=60;w=60',
      RateLimit: '"default";r=59;t=30',
    });
  });

  it("describes a refused request, with Retry-After in whole seconds", () => {
    freezeTime(0);
    const decision: RateLimitDecision = {
      allowed: false,
      limit: 60,
      remaining: 0,
      resetAt: Date.now() + 12_300,
      retryAfterSeconds: 13,
    };
    expect(rateLimitHeaders(decision, 60, "datasets")).toEqual({
      "RateLimit-Policy": '"datasets";q=60;w=60',
      RateLimit: '"datasets";r=0;t=13',
      "Retry-After": "13",
    });
  });

  it("writes the policy name as a structured-field string", () => {
    const decision = { allowed: true, limit: 1, remaining: 1, resetAt: 0, retryAfterSeconds: 0 };
    expect(rateLimitHeaders(decision, 1, 'a"b\\c')["RateLimit-Policy"]).toBe('"a\\"b\\\\c";q=1;w=1');
    expect(() => rateLimitHeaders(decision, 1, "é")).toThrow(TypeError);
  });
});

describe("createRateLimiter", () => {
  it("refuses a limit or window that is not a positive integer", () => {
    expect(() => createRateLimiter({ prefix: "p", limit: 0, windowSeconds: 60 })).toThrow(RangeError);
    expect(() => createRateLimiter({ prefix: "p", limit: 60, windowSeconds: 0.5 })).toThrow(RangeError);
  });

  it("picks Upstash when both of its variables are set, then REDIS_URL, then the in-process store", () => {
    const upstash = { UPSTASH_REDIS_REST_URL: "https://example.upstash.io", UPSTASH_REDIS_REST_TOKEN: "token" };
    expect(remoteBackend({ ...upstash, REDIS_URL: "redis://127.0.0.1:6379" })?.kind).toBe("upstash");
    expect(
      remoteBackend({ UPSTASH_REDIS_REST_URL: upstash.UPSTASH_REDIS_REST_URL, REDIS_URL: "redis://x" })?.kind,
    ).toBe("redis");
    expect(remoteBackend({ REDIS_URL: "" })).toBeUndefined();
    expect(remoteBackend({})).toBeUndefined();
  });
});

/** Runs a check and measures how long it took (performance.now: Date is frozen in these tests). */
async function timedCheck(limiter: RateLimiter, identifier: string) {
  const start = performance.now();
  const decision = await limiter.check(identifier);
  return { decision, ms: performance.now() - start };
}

describe("shared store unreachable: the in-process fallback enforces the limit", () => {
  let warn: MockInstance<Logger["warn"]>;
  beforeEach(() => {
    warn = vi.spyOn(logger(), "warn").mockImplementation(() => {});
    freezeTime(10_000);
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it("Redis refusing connections: 60 allowed, each check quick, one warning", async () => {
    const limiter = limiterFor({ REDIS_URL: "redis://127.0.0.1:1" });
    const results = [];
    for (let i = 0; i <= LIMIT; i++) results.push(await timedCheck(limiter, "buyer"));
    expect(results.filter((r) => r.decision.allowed)).toHaveLength(LIMIT);
    expect(results.at(-1)!.decision).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 50 });
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(1500);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/^Rate limiter: Redis unavailable/);
  });

  describe("Redis accepting connections but never answering", () => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
    });
    let url = "";
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });

    it("answers every check within the deadline, and only one check at a time waits for the store", async () => {
      const limiter = limiterFor({ REDIS_URL: url });
      const burst = await Promise.all(Array.from({ length: LIMIT + 1 }, () => timedCheck(limiter, "buyer")));
      expect(burst.filter((r) => r.decision.allowed)).toHaveLength(LIMIT);
      expect(Math.max(...burst.map((r) => r.ms))).toBeLessThan(1500);

      const [probe, other] = await Promise.all([timedCheck(limiter, "other"), timedCheck(limiter, "other")]);
      expect(probe.ms).toBeGreaterThanOrEqual(900);
      expect(probe.ms).toBeLessThan(1500);
      expect(other.ms).toBeLessThan(300);
      expect([probe.decision.allowed, other.decision.allowed]).toEqual([true, true]);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]![0]).toMatch(/no answer within 1000 ms/);
    });
  });

  it("Upstash unreachable: the factory built the Upstash client, and the fallback answers", async () => {
    const limiter = limiterFor({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1", UPSTASH_REDIS_REST_TOKEN: "token" });
    const { decision, ms } = await timedCheck(limiter, "buyer");
    expect(decision).toMatchObject({ allowed: true, limit: LIMIT, remaining: LIMIT - 1 });
    expect(ms).toBeLessThan(1500);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/^Rate limiter: Upstash Redis unavailable/);
  });
});
