import { randomUUID } from "node:crypto";
import { Ratelimit } from "@upstash/ratelimit";
import fc from "fast-check";
import IORedis from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { remoteBackend } from "@/lib/ratelimit/backends";
import { ExpiringBlockCache, InProcessSlidingWindow } from "@/lib/ratelimit/sliding-window";
import { limiterHeap } from "@/tests/helpers/heap";
import { needingRedis } from "@/tests/helpers/rate-limit";

const redisUrl = process.env.REDIS_URL;

/**
 * The in-process store must decide as @upstash/ratelimit does: the same requests, at the same
 * instants, through the library on a real Redis (its own Lua script, with its ephemeral cache, as
 * the app runs it) and through lib/ratelimit/sliding-window.ts give the same success, remaining,
 * reset and limit at every step. Only Date is faked; Redis is real.
 */
describe.skipIf(!redisUrl)(needingRedis("the in-process sliding window against @upstash/ratelimit on Redis"), () => {
  const prefix = `test:ratelimit:parity:${randomUUID()}`;
  let admin: IORedis;

  beforeAll(async () => {
    admin = new IORedis(redisUrl!, { connectTimeout: 2000, maxRetriesPerRequest: 1 });
    // An unreachable Redis fails here, loudly: REDIS_URL is set.
    expect(await admin.ping()).toBe("PONG");
  });
  afterEach(() => vi.useRealTimers());
  afterAll(async () => {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
  });

  /** `refund`: give back one request (a query refused as too_many_queries) instead of checking one. */
  type Step = { advanceMs: number; identifier: number; refund?: boolean };

  /** `startMs`: where in a window the run starts. */
  async function replay(steps: Step[], limit: number, windowMs: number, run: string, startMs = 0) {
    const library = new Ratelimit({
      redis: remoteBackend({ REDIS_URL: redisUrl })!.connect(),
      prefix: `${prefix}:${run}`,
      limiter: Ratelimit.slidingWindow(limit, `${windowMs} ms`),
      timeout: 0,
      ephemeralCache: new Map(),
    });
    const ours = new InProcessSlidingWindow(limit, windowMs);
    // A window far from any other run's instants.
    let now = Math.floor(Date.now() / windowMs) * windowMs + 1_000_000 * windowMs + startMs;
    vi.useFakeTimers({ toFake: ["Date"] });
    const mismatches: string[] = [];
    for (const [index, step] of steps.entries()) {
      now += step.advanceMs;
      vi.setSystemTime(now);
      const identifier = `buyer-${step.identifier}`;
      if (step.refund) {
        await library.limit(identifier, { rate: -1 });
        ours.refund(identifier, now);
        continue;
      }
      const expected = await library.limit(identifier);
      const actual = ours.check(identifier, now);
      const pick = (result: typeof actual) => ({
        success: result.success,
        remaining: result.remaining,
        reset: result.reset,
        limit: result.limit,
      });
      if (JSON.stringify(pick(expected)) !== JSON.stringify(pick(actual))) {
        mismatches.push(
          `step ${index} (+${step.advanceMs} ms, ${identifier}): library ${JSON.stringify(pick(expected))}, ours ${JSON.stringify(pick(actual))}`,
        );
      }
    }
    vi.useRealTimers();
    return mismatches;
  }

  it("the contract's 60 a minute: a burst, refusals, the window sliding, idle gaps", async () => {
    const steps: Step[] = [
      // 70 at once: 60 allowed, then refused (and cached) until the reset.
      ...Array.from({ length: 70 }, () => ({ advanceMs: 10, identifier: 1 })),
      // Into the next window: the previous window's 60 weigh in, falling as it slides.
      ...Array.from({ length: 120 }, () => ({ advanceMs: 1_000, identifier: 1 })),
      // Two idle windows, then again.
      { advanceMs: 150_000, identifier: 1 },
      ...Array.from({ length: 65 }, (_, i) => ({ advanceMs: 250, identifier: i % 2 })),
    ];
    expect(await replay(steps, 60, 60_000, "contract", 12_345)).toEqual([]);
  });

  it("gives back a refunded request as the library's negative rate does, in this window only", async () => {
    const steps: Step[] = [
      ...Array.from({ length: 3 }, () => ({ advanceMs: 10, identifier: 1 })),
      { advanceMs: 10, identifier: 1, refund: true },
      { advanceMs: 10, identifier: 1 },
      // At the limit, a refund lets one more in.
      ...Array.from({ length: 3 }, () => ({ advanceMs: 10, identifier: 1 })),
      { advanceMs: 10, identifier: 1, refund: true },
      { advanceMs: 10, identifier: 1 },
      // Into the next window: the previous one's count, refunds included, weighs in.
      { advanceMs: 1_000, identifier: 1 },
      { advanceMs: 10, identifier: 1, refund: true },
      { advanceMs: 10, identifier: 1 },
    ];
    expect(await replay(steps, 5, 1_000, "refund", 100)).toEqual([]);
  });

  it("at the very instant of a reset, and just after it", async () => {
    // At 0, 1 and 2 ms into a window (the third refused), then exactly at its end, then 1 ms later.
    const steps: Step[] = [
      { advanceMs: 0, identifier: 1 },
      { advanceMs: 1, identifier: 1 },
      { advanceMs: 1, identifier: 1 },
      { advanceMs: 998, identifier: 1 },
      { advanceMs: 1, identifier: 1 },
    ];
    expect(await replay(steps, 2, 1_000, "boundary")).toEqual([]);
  });

  it("limits too large to pack into one integer (an operator's social rate): the edge, and 100 million", async () => {
    // 16,384 is the first limit kept as an object per account: a burst past it, then the window sliding.
    const edge: Step[] = [
      ...Array.from({ length: 16_390 }, () => ({ advanceMs: 0, identifier: 1 })),
      ...Array.from({ length: 90 }, () => ({ advanceMs: 1_000, identifier: 1 })),
    ];
    expect(await replay(edge, 16_384, 60_000, "wide-edge", 30_000)).toEqual([]);
    const huge: Step[] = Array.from({ length: 50 }, (_, i) => ({ advanceMs: 700, identifier: i % 3 }));
    expect(await replay(huge, 100_000_000, 10_000, "wide-huge")).toEqual([]);
  }, 120_000);

  it("any sequence of requests from a few accounts, at any spacing", async () => {
    const step = fc.record({
      advanceMs: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3_000 }), fc.constant(0)),
      identifier: fc.integer({ min: 0, max: 2 }),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 300 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 0, max: 1_999 }),
        async (steps, limit, startMs) => {
          expect(await replay(steps, limit, 2_000, `property-${run++}`, startMs)).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("the in-process sliding window's memory", () => {
  it("holds 100,000 accounts seen in one window in under 30 MB of heap, and gives it back within two windows", () => {
    const heap = limiterHeap(new InProcessSlidingWindow(60, 60_000), { accounts: 100_000, windowMs: 60_000 });
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    console.log(
      `in-process limiter heap: ${mb(heap.filledBytes)} MB for ${heap.accounts} accounts ` +
        `(${Math.round(heap.bytesPerAccount)} B each), ${mb(heap.afterTwoWindowsBytes)} MB two windows later`,
    );
    expect(heap.filledBytes).toBeGreaterThan(0);
    expect(heap.filledBytes).toBeLessThan(30 * 1024 * 1024);
    expect(Math.abs(heap.afterTwoWindowsBytes)).toBeLessThan(5 * 1024 * 1024);
  });

  it("drops counts that can no longer matter: 100,000 accounts, two windows later, leave nothing behind", () => {
    const window = new InProcessSlidingWindow(60, 60_000);
    const start = 1_800_000_000_000;
    for (let i = 0; i < 100_000; i++) window.check(`buyer-${i}`, start + (i % 1000));
    expect(window.size).toBe(100_000);
    // One window later they still weigh in (the previous window) and are kept.
    window.check("someone", start + 60_000);
    expect(window.size).toBe(100_001);
    window.check("someone", start + 120_000);
    expect(window.size).toBe(1);
  });

  it("forgets a refusal once its reset has passed", () => {
    const window = new InProcessSlidingWindow(1, 1_000);
    expect(window.check("a", 10_000).success).toBe(true);
    expect(window.check("a", 10_001)).toEqual({ success: false, limit: 1, remaining: 0, reset: 11_000 });
    window.check("b", 12_500);
    window.check("b", 13_500);
    expect(window.size).toBe(1);
  });

  it("the shared stores' cache of refusals drops the expired ones (the library only drops an entry it reads again)", () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(1_800_000_000_000);
    const cache = new ExpiringBlockCache();
    for (let i = 0; i < 10_000; i++) cache.set(`buyer-${i}`, Date.now() + 30_000);
    expect(cache.size).toBe(10_000);
    vi.setSystemTime(Date.now() + 61_000);
    cache.set("latest", Date.now() + 30_000);
    expect([...cache.keys()]).toEqual(["latest"]);
    vi.useRealTimers();
  });
});
