/**
 * Pacing under the server's sliding-window limit, from its RateLimit headers alone
 * (`RateLimit: "datasets";r=<left>;t=<s to the window's end>`, `RateLimit-Policy: ...;q=<quota>;w=<s>`), so that a
 * client alone on its account never meets a 429, also with several requests in flight.
 *
 * Two facts about the server's window (@upstash/ratelimit's sliding window: a fixed window's count plus the
 * previous window's weighted by the share it still covers) make two safe ways to send:
 *
 * 1. Counted: what is left never shrinks with time alone, so an answer's `r`, less every request that may have been
 *    counted after it (those sent after it and those in flight when it was sent: answers arrive out of order), is a
 *    lower bound of what is left now. The client keeps the best such bound and spends it.
 * 2. Paced: once nothing is left, one more request fits a slot (w/q) after the end of the window holding the last
 *    counted request, and then one at a time, each a slot after the previous one's answer: the server counts them
 *    at least a slot apart, so the previous window holds at most q and the current one at most one per slot gone
 *    by. That is the limit's own rate (less a round trip per request), so the client stays paced until an answer
 *    tells much room again (half the quota: it was idle): counted requests in a window make the next paced one
 *    wait for that window's end.
 *
 * Anything else (no header, an exempt account) is sent at once.
 */
export type Clock = { now(): number };

/** A request let through: what the pacer needs back when its answer comes. */
export type Ticket = { readonly seq: number; readonly inFlightAtSend: number; readonly counted: boolean };

/** What a RateLimit header pair says. */
export type RateLimitState = { remaining: number; resetSeconds: number; quota?: number; windowSeconds?: number };

export function parseRateLimit(headers: Headers): RateLimitState | undefined {
  const state = /(?:^|;)\s*r=(\d+)\s*;\s*t=(\d+)/.exec(headers.get("ratelimit") ?? "");
  if (!state) return undefined;
  const policy = /(?:^|;)\s*q=(\d+)\s*;\s*w=(\d+)/.exec(headers.get("ratelimit-policy") ?? "");
  return {
    remaining: Number(state[1]),
    resetSeconds: Number(state[2]),
    ...(policy && Number(policy[1]) > 0 ? { quota: Number(policy[1]), windowSeconds: Number(policy[2]) } : {}),
  };
}

export class RatePacer {
  /** Requests sent so far (a request's `seq` is its place among them). */
  private sent = 0;
  private inFlight = 0;
  /** The best lower bound of what the account has left (undefined: never told, so not limited). */
  private left: number | undefined;
  /** Sending one per slot (see above) instead of spending `left`. */
  private paced = false;
  /** The quota (q), once told. */
  private quota = 0;
  /** One quota's share of the window (w/q), in ms, once told; without a policy, the told window's end. */
  private slotMs = 0;
  /** The end of the window the last answer named. */
  private toldWindowEnd = 0;
  /** The latest end of a window that held a counted request: no paced request before it plus a slot. */
  private countedWindowEnd = 0;
  /** When the last paced request's answer came (the next one waits a slot after it). */
  private lastPacedAt = -Infinity;
  /** No request before this instant (a 429's Retry-After). */
  private blockedUntil = 0;
  /** Requests waiting for an answer to come. */
  private waiters: (() => void)[] = [];

  constructor(private readonly clock: Clock = Date) {}

  /** Waits until a request may be sent and takes its place; `pause` waits on the clock (for a 429 or the pacing). */
  async acquire(pause: (ms: number) => Promise<void>): Promise<Ticket> {
    for (;;) {
      const decision = this.decide();
      if (decision.go) {
        const ticket: Ticket = { seq: this.sent++, inFlightAtSend: this.inFlight, counted: decision.counted };
        this.inFlight++;
        if (this.left !== undefined) this.left--;
        return ticket;
      }
      // A timed wait has nothing in flight to end it sooner (paced), or waits out a 429 whatever comes.
      if (decision.waitMs !== undefined) await pause(decision.waitMs);
      else await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** The answer to `ticket` came (`state` undefined: it carried no RateLimit header, or none came at all). */
  release(ticket: Ticket, state: RateLimitState | undefined, retryAfterMs?: number): void {
    this.inFlight--;
    const now = this.clock.now();
    // Counted, if at all, by now: the next paced request waits a slot from here, so that the server counts paced
    // requests at least a slot apart whatever each one's latency (spacing their sends let a slow one and the next
    // land in the same window's slot, and the window's last slot spill into the next: a 429).
    if (!ticket.counted) this.lastPacedAt = now;
    if (retryAfterMs !== undefined) {
      this.blockedUntil = Math.max(this.blockedUntil, now + retryAfterMs);
      this.left = Math.min(this.left ?? 0, 0);
    }
    if (state) {
      if (state.quota && state.windowSeconds) {
        this.quota = state.quota;
        this.slotMs = (state.windowSeconds * 1000) / state.quota;
      }
      // May have been counted after this answer's count: every request sent after it, and every one in flight then.
      const bound = state.remaining - (this.sent - ticket.seq - 1) - ticket.inFlightAtSend;
      this.left = Math.max(this.left ?? bound, bound);
      // `t` is rounded up and read after the server's count: this end is never before the window's real end.
      this.toldWindowEnd = now + state.resetSeconds * 1000;
      if (ticket.counted) this.countedWindowEnd = Math.max(this.countedWindowEnd, this.toldWindowEnd);
      if (this.paced && this.quota > 0 && state.remaining >= Math.max(2, this.quota / 2)) this.paced = false;
    }
    for (const wake of this.waiters.splice(0)) wake();
  }

  private decide(): { go: true; counted: boolean } | { go: false; waitMs?: number } {
    const now = this.clock.now();
    if (now < this.blockedUntil) return { go: false, waitMs: this.blockedUntil - now };
    if (!this.paced && (this.left === undefined || this.left > 0)) return { go: true, counted: true };
    // Paced, or nothing left: one at a time, each answer may tell more.
    if (this.inFlight > 0) return { go: false };
    this.paced = true;
    const at =
      this.slotMs > 0
        ? Math.max(this.countedWindowEnd + this.slotMs, this.lastPacedAt + this.slotMs)
        : Math.max(this.toldWindowEnd, this.lastPacedAt);
    return at <= now ? { go: true, counted: false } : { go: false, waitMs: at - now };
  }
}
