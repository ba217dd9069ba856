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

/**
 * Each account's counts are one V8 small integer, not an object: the previous window's count, the
 * current window's count and the parity of the window they belong to. 100,000 accounts in one window
 * then cost a Map entry and the identifier each (tests/ratelimit/sliding-window-parity.test.ts
 * measures the heap). Counts never exceed the limit, so a limit up to COUNT_MASK packs; a larger one
 * (an operator's social rate may be any number) keeps an object per account.
 */
const COUNT_BITS = 14;
const COUNT_MASK = (1 << COUNT_BITS) - 1;
type WideCounts = { parity: number; current: number; previous: number };
type Counts = number | WideCounts;

const parityOf = (counts: Counts) => (typeof counts === "number" ? counts & 1 : counts.parity);
const currentOf = (counts: Counts) => (typeof counts === "number" ? (counts >> 1) & COUNT_MASK : counts.current);
const previousOf = (counts: Counts) => (typeof counts === "number" ? counts >> (COUNT_BITS + 1) : counts.previous);

export class InProcessSlidingWindow {
  private readonly counts = new Map<string, Counts>();
  /** Refused until this instant (ms since the epoch), inclusive, as the library's cache. */
  private readonly blocked = new Map<string, number>();
  /** The window of the last sweep: every entry of `counts` belongs to it or to the one before. */
  private sweptWindow = Number.NEGATIVE_INFINITY;
  private readonly packs: boolean;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`the in-process limiter counts a positive whole number of requests, not ${limit}`);
    }
    this.packs = limit <= COUNT_MASK;
  }

  private store(identifier: string, window: number, current: number, previous: number): void {
    this.counts.set(
      identifier,
      this.packs
        ? (previous << (COUNT_BITS + 1)) | (current << 1) | (window & 1)
        : { parity: window & 1, current, previous },
    );
  }

  /** `now` moves forward (Date.now() in the server): a window once swept is not revisited. */
  check(identifier: string, now = Date.now()): SlidingWindowResult {
    const window = Math.floor(now / this.windowMs);
    const reset = (window + 1) * this.windowMs;
    if (window > this.sweptWindow) this.sweep(window, now);

    const blockedUntil = this.blocked.get(identifier);
    if (blockedUntil !== undefined) {
      if (blockedUntil >= now) return { success: false, limit: this.limit, remaining: 0, reset: blockedUntil };
      this.blocked.delete(identifier);
    }
    let current = 0;
    let previous = 0;
    const stored = this.counts.get(identifier);
    if (stored !== undefined) {
      // After the sweep an entry is this window's (same parity) or the previous window's.
      if (parityOf(stored) === (window & 1)) {
        current = currentOf(stored);
        previous = previousOf(stored);
      } else {
        previous = currentOf(stored);
      }
    }
    const weightedPrevious = Math.floor((1 - (now % this.windowMs) / this.windowMs) * previous);
    if (weightedPrevious + current >= this.limit) {
      this.store(identifier, window, current, previous);
      this.blocked.set(identifier, reset);
      return { success: false, limit: this.limit, remaining: 0, reset };
    }
    current += 1;
    this.store(identifier, window, current, previous);
    return {
      success: true,
      limit: this.limit,
      remaining: Math.max(0, this.limit - (current + weightedPrevious)),
      reset,
    };
  }

  /**
   * Gives back one request counted in this window (one the product chose not to count after all)
   * and, as the library does, forgets a refusal: the next check counts again.
   */
  refund(identifier: string, now = Date.now()): void {
    this.blocked.delete(identifier);
    const window = Math.floor(now / this.windowMs);
    const stored = this.counts.get(identifier);
    if (stored === undefined || parityOf(stored) !== (window & 1) || currentOf(stored) === 0) return;
    this.store(identifier, window, currentOf(stored) - 1, previousOf(stored));
  }

  /** How many identifiers it holds (for tests and the memory benchmark). */
  get size(): number {
    let size = this.counts.size;
    for (const identifier of this.blocked.keys()) if (!this.counts.has(identifier)) size += 1;
    return size;
  }

  /** Drops counts older than the previous window and refusals whose reset has passed. */
  private sweep(window: number, now: number): void {
    if (window - this.sweptWindow >= 2) {
      this.counts.clear();
    } else {
      // Entries are from sweptWindow (now the previous window: kept) or the one before it, whose
      // parity is this window's: those can no longer matter.
      for (const [identifier, counts] of this.counts)
        if (parityOf(counts) === (window & 1)) this.counts.delete(identifier);
    }
    for (const [identifier, until] of this.blocked) if (until < now) this.blocked.delete(identifier);
    this.sweptWindow = window;
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
