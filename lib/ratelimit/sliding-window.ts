/**
 * The in-process store of the single-instance default: @upstash/ratelimit's sliding window, computed
 * in JavaScript instead of running the library's Lua script in a Lua interpreter (microseconds per
 * check instead of about a millisecond). Its decisions are the library's, including the library's
 * ephemeral cache that the shared stores use (tests/ratelimit/sliding-window-parity.test.ts drives
 * the same requests through both, the library on a real Redis):
 *
 * - time is cut into fixed windows of `windowMs`; a check at `now` counts the current window's
 *   requests plus the previous window's weighted by the share of the previous window the sliding
 *   window still covers, floored: floor((1 - (now % windowMs) / windowMs) * previous);
 * - the request is refused when that sum is already >= limit; otherwise it is counted, and
 *   `remaining` is limit - (current after counting + weighted previous);
 * - `reset` is the end of the current fixed window;
 * - once refused, the identifier is refused without looking at the counts until that reset (the
 *   library's ephemeral cache: a blocked account costs nothing, and stays blocked until the moment
 *   its Retry-After named).
 *
 * Memory is bounded by the identifiers seen in the last two windows: counts older than the previous
 * window can never matter again and are swept once per window.
 */
export type SlidingWindowResult = { success: boolean; limit: number; remaining: number; reset: number };

type Counts = {
  /** index of the fixed window `current` counts */
  window: number;
  current: number;
  previous: number;
  /** refused until this instant (ms since the epoch), inclusive, as the library's cache */
  blockedUntil: number;
};

export class InProcessSlidingWindow {
  private readonly counts = new Map<string, Counts>();
  private nextSweepAt = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  check(identifier: string, now = Date.now()): SlidingWindowResult {
    const window = Math.floor(now / this.windowMs);
    const reset = (window + 1) * this.windowMs;
    if (now >= this.nextSweepAt) this.sweep(window, now);

    let counts = this.counts.get(identifier);
    if (counts && counts.blockedUntil >= now) {
      return { success: false, limit: this.limit, remaining: 0, reset: counts.blockedUntil };
    }
    if (!counts) {
      counts = { window, current: 0, previous: 0, blockedUntil: -1 };
      this.counts.set(identifier, counts);
    } else if (counts.window !== window) {
      counts.previous = counts.window === window - 1 ? counts.current : 0;
      counts.current = 0;
      counts.window = window;
    }
    const weightedPrevious = Math.floor((1 - (now % this.windowMs) / this.windowMs) * counts.previous);
    if (weightedPrevious + counts.current >= this.limit) {
      counts.blockedUntil = reset;
      return { success: false, limit: this.limit, remaining: 0, reset };
    }
    counts.current += 1;
    return {
      success: true,
      limit: this.limit,
      remaining: Math.max(0, this.limit - (counts.current + weightedPrevious)),
      reset,
    };
  }

  /** How many identifiers it holds (for tests and the memory benchmark). */
  get size(): number {
    return this.counts.size;
  }

  private sweep(window: number, now: number): void {
    for (const [identifier, counts] of this.counts) {
      if (counts.window < window - 1 && counts.blockedUntil < now) this.counts.delete(identifier);
    }
    this.nextSweepAt = (window + 1) * this.windowMs;
  }
}

/**
 * The library's ephemeral cache for the shared stores (identifier -> blocked until), bounded: the
 * library deletes an entry only when its identifier is checked again after the reset, so an account
 * blocked once and never seen again would stay forever. Expired entries are swept once a minute.
 */
export class ExpiringBlockCache extends Map<string, number> {
  private nextSweepAt = 0;

  override set(identifier: string, blockedUntil: number): this {
    const now = Date.now();
    if (now >= this.nextSweepAt) {
      for (const [key, until] of this) if (until < now) this.delete(key);
      this.nextSweepAt = now + 60_000;
    }
    return super.set(identifier, blockedUntil);
  }
}
