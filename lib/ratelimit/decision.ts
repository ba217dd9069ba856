/** What a limiter answers for one request (rendered as headers by headers.ts). */
export type RateLimitDecision = {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** ms since the epoch when the window frees capacity */
  resetAt: number;
  /** whole seconds, >= 1 when not allowed, 0 when allowed */
  retryAfterSeconds: number;
};
