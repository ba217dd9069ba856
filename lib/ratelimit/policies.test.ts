import { describe, expect, it } from "vitest";
import type { AppError } from "../errors";
import { enforceRatePolicy, type RatePolicy } from "./policies";

/** A policy whose limiter refuses every request, the window freeing in `retryAfterSeconds`. */
const refusing = (retryAfterSeconds: number): RatePolicy => ({
  name: "datasets",
  limit: 60,
  windowSeconds: 60,
  scope: "its dataset keys",
  limiter: () => ({
    check: async () => ({ allowed: false, limit: 60, remaining: 0, resetAt: Date.now(), retryAfterSeconds }),
    refund: async () => undefined,
  }),
});

describe("a rate_limited refusal", () => {
  it.each([
    [1, "Retry after 1 second."],
    [17, "Retry after 17 seconds."],
  ])("waiting %d s says %s", async (seconds, text) => {
    const error = await enforceRatePolicy(refusing(seconds), "usr_x").then(
      () => undefined,
      (thrown: unknown) => thrown as AppError,
    );
    expect(error?.code).toBe("rate_limited");
    expect(error?.message.endsWith(` ${text}`), error?.message).toBe(true);
    expect(error?.headers["Retry-After"]).toBe(String(seconds));
  });
});
