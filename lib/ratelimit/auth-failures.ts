import ipaddr from "ipaddr.js";
import { AUTH_FAILURE_LIMIT } from "../contract";
import { AppError, type ErrorCode } from "../errors";
import { processSingleton } from "../singleton";
import { rateLimitHeaders } from "./headers";
import { createRateLimiter, type RateLimiter } from "./index";
import { formatSeconds } from "../format";

/**
 * Failed API authentications are limited per client address, so that keys which pass the public
 * checksum (each costs a database lookup) cannot starve the pool: AUTH_FAILURE_LIMIT (100 a
 * minute). Normal traffic pays nothing: only failures are counted (in the shared limiter), and a
 * client over the limit is noted in this process, so its next requests, whatever key they carry,
 * are refused without a database lookup or a store round trip until the window frees capacity
 * (at most a minute: an office behind one NAT with a misconfigured integration is not locked out
 * for long). Other instances learn of it at the client's next failure there.
 */
export const AUTH_FAILURES_POLICY_NAME = "auth-failures";

/** What counts as a failed authentication: the API's 401 answers. */
const FAILURES = new Set<ErrorCode>(["missing_api_key", "invalid_api_key", "expired_api_key", "revoked_api_key"]);

/** Bounds the note of clients over the limit (one entry per blocked client, for at most a window). */
const MAX_NOTED_CLIENTS = 10_000;

export type AuthFailureGuard = {
  /** Runs `authenticate` for `clientAddress`: refused at once when the client is noted; a failure is counted. */
  authenticate<T>(clientAddress: string, authenticate: () => Promise<T>): Promise<T>;
};

export function authFailureGuard(limiter: RateLimiter, now: () => number = Date.now): AuthFailureGuard {
  /** Client key -> when it may try again (ms since the epoch). */
  const noted = new Map<string, number>();

  function refusal(resetAt: number, retryAfterSeconds: number): AppError {
    const { limit, windowSeconds } = AUTH_FAILURE_LIMIT;
    const decision = { allowed: false, limit, remaining: 0, resetAt, retryAfterSeconds };
    return new AppError(
      "rate_limited",
      `Too many failed authentications from your address: more than ${limit} in ${windowSeconds} seconds. Check the API key your client sends, and retry after ${formatSeconds(retryAfterSeconds)}.`,
      rateLimitHeaders(decision, windowSeconds, AUTH_FAILURES_POLICY_NAME),
    );
  }

  function note(client: string, until: number): void {
    if (noted.size >= MAX_NOTED_CLIENTS) {
      for (const [key, expiry] of noted) if (expiry <= now()) noted.delete(key);
      // Still full: forget the oldest note (the store still counts that client's failures).
      if (noted.size >= MAX_NOTED_CLIENTS) noted.delete(noted.keys().next().value!);
    }
    noted.set(client, until);
  }

  return {
    async authenticate(clientAddress, authenticate) {
      // Parsing the address is for failures and noted clients only: a valid key's request skips it.
      if (noted.size > 0) {
        const client = clientKey(clientAddress);
        const until = noted.get(client);
        if (until !== undefined && until > now()) throw refusal(until, Math.max(1, Math.ceil((until - now()) / 1000)));
        if (until !== undefined) noted.delete(client);
      }
      try {
        return await authenticate();
      } catch (error) {
        if (!(error instanceof AppError && FAILURES.has(error.code))) throw error;
        const client = clientKey(clientAddress);
        const decision = await limiter.check(client);
        if (!decision.allowed) {
          note(client, decision.resetAt);
          throw refusal(decision.resetAt, decision.retryAfterSeconds);
        }
        // The refusal says how many failures are left before the limit.
        const headers = rateLimitHeaders(decision, AUTH_FAILURE_LIMIT.windowSeconds, AUTH_FAILURES_POLICY_NAME);
        throw new AppError(error.code, error.message, { ...error.headers, ...headers });
      }
    },
  };
}

/**
 * Whom a failure is counted against: an IPv4 address (also when written IPv4-mapped), or the /64
 * network of an IPv6 address, as one subscriber holds a whole /64. Anything else (no address) as given.
 */
export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address.slice(0, 64);
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const network = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...network, 0, 0, 0, 0]).toRFC5952String()}/64`;
}

/** The process's guard, on a limiter shared through the rate limit's store (lib/ratelimit). */
export function authFailures(): AuthFailureGuard {
  return processSingleton("ratelimit:auth-failures", () =>
    authFailureGuard(createRateLimiter({ prefix: "ratelimit:auth-failures", ...AUTH_FAILURE_LIMIT })),
  );
}
