import { describe, expect, it } from "vitest";
import { AUTH_FAILURE_LIMIT } from "../contract";
import { AppError } from "../errors";
import { authFailureGuard, clientKey } from "./auth-failures";
import { createRateLimiter, type RateLimiter } from "./index";

const { limit, windowSeconds } = AUTH_FAILURE_LIMIT;
let prefixes = 0;

/** The in-process sliding window, counting how often it is asked. */
function countingLimiter(): RateLimiter & { checks: number } {
  const limiter = createRateLimiter({ prefix: `test:auth-failures:${++prefixes}`, limit, windowSeconds }, { env: {} });
  const counting = {
    checks: 0,
    check: (identifier: string) => {
      counting.checks++;
      return limiter.check(identifier);
    },
    refund: (identifier: string) => limiter.refund(identifier),
  };
  return counting;
}

const invalidKey = () => Promise.reject(new AppError("invalid_api_key", "The API key is not valid."));
const validKey = () => Promise.resolve("key");

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe("the failed-authentication limit", () => {
  it("counts only failures: successful authentications never reach the limiter", async () => {
    const limiter = countingLimiter();
    const guard = authFailureGuard(limiter);
    for (let i = 0; i < 3 * limit; i++) await guard.authenticate("10.0.0.1", validKey);
    expect(limiter.checks).toBe(0);
  });

  it(`answers the first ${limit} failures as they are, with the policy's headers, then refuses the address`, async () => {
    const limiter = countingLimiter();
    const guard = authFailureGuard(limiter);
    for (let i = 1; i <= limit; i++) {
      const error = await refusal(guard.authenticate("10.0.0.1", invalidKey));
      expect(error.code).toBe("invalid_api_key");
      expect(error.headers.RateLimit).toMatch(new RegExp(`^"auth-failures";r=${limit - i};t=\\d+$`));
    }
    const refused = await refusal(guard.authenticate("10.0.0.1", invalidKey));
    expect(refused.code).toBe("rate_limited");
    expect(refused.message).toMatch(/Too many failed authentications from your address/);
    expect(refused.headers["RateLimit-Policy"]).toBe(`"auth-failures";q=${limit};w=${windowSeconds}`);
    expect(Number(refused.headers["Retry-After"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["Retry-After"])).toBeLessThanOrEqual(windowSeconds);

    // Noted: refused whatever the key, without authenticating or asking the limiter.
    const checks = limiter.checks;
    let authenticated = false;
    const noted = await refusal(guard.authenticate("10.0.0.1", () => ((authenticated = true), validKey())));
    expect(noted.code).toBe("rate_limited");
    expect(noted.headers.RateLimit).toMatch(/^"auth-failures";r=0;t=\d+$/);
    expect(authenticated).toBe(false);
    expect(limiter.checks).toBe(checks);

    // Another address is unaffected.
    await expect(guard.authenticate("10.0.0.2", validKey)).resolves.toBe("key");
  });

  it("lets the address in again once the window frees capacity", async () => {
    let now = Date.now();
    const limiter: RateLimiter = {
      check: async () => ({ allowed: false, limit, remaining: 0, resetAt: now + 30_000, retryAfterSeconds: 30 }),
      refund: async () => {},
    };
    const guard = authFailureGuard(limiter, () => now);
    expect((await refusal(guard.authenticate("10.0.0.1", invalidKey))).code).toBe("rate_limited");
    expect((await refusal(guard.authenticate("10.0.0.1", validKey))).headers["Retry-After"]).toBe("30");
    now += 30_000;
    await expect(guard.authenticate("10.0.0.1", validKey)).resolves.toBe("key");
  });

  it("does not count other errors (a database outage is not the client's failure)", async () => {
    const limiter = countingLimiter();
    const guard = authFailureGuard(limiter);
    const outage = new Error("Connection terminated due to connection timeout");
    await expect(guard.authenticate("10.0.0.1", () => Promise.reject(outage))).rejects.toBe(outage);
    const forbidden = new AppError("insufficient_permission", "no");
    await expect(guard.authenticate("10.0.0.1", () => Promise.reject(forbidden))).rejects.toBe(forbidden);
    expect(limiter.checks).toBe(0);
  });

  it.each([
    ["10.1.2.3", "10.1.2.3"],
    ["::ffff:10.1.2.3", "10.1.2.3"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["2001:db8:1:3::1", "2001:db8:1:3::/64"],
    ["unknown", "unknown"],
    ["x".repeat(200), "x".repeat(64)],
  ])("counts %s against %s", (address, key) => {
    expect(clientKey(address)).toBe(key);
  });
});
