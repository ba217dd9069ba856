import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { holdLease } from "./lease";

describe("holdLease", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("renews while the attempt moves, and lets go once nothing moved for the idle limit", async () => {
    const renew = vi.fn(async () => true);
    const lease = holdLease(renew, { leaseMs: 3000, idleLimitMs: 5000 });
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(1000);
      lease.moved();
    }
    expect(renew).toHaveBeenCalledTimes(5);
    expect(lease.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(4000);
    expect(renew).toHaveBeenCalledTimes(9);
    await vi.advanceTimersByTimeAsync(1000);
    expect(lease.signal.aborted).toBe(true);
    expect(String(lease.signal.reason)).toMatch(/nothing moved for 5 s/);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renew).toHaveBeenCalledTimes(9);
    lease.stop();
  });

  it("aborts when the lease is no longer this attempt's", async () => {
    const lease = holdLease(async () => false, { leaseMs: 3000, idleLimitMs: 60_000 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(String(lease.signal.reason)).toMatch(/taken over or deleted/);
    lease.stop();
  });
});
