/**
 * The numbers the API promises (docs/api.md), stated once: the code enforces them and the
 * API reference, the OpenAPI document and error messages are written from them. Dependency-free,
 * so anything may import it (the OpenAPI document is served without loading the database client).
 */

/** 60 requests per minute per buyer account, shared by all its datasets:read keys. */
export const DATASETS_RATE_LIMIT = { limit: 60, windowSeconds: 60 } as const;

/**
 * Failed authentications (401) per client address (an IPv6 /64) and minute, beyond which that
 * address is refused for the rest of the window (ours, not the contract's: lib/ratelimit/auth-failures.ts).
 * Above the dataset limit, so one integration polling with a revoked key at the API's full rate is never refused.
 */
export const AUTH_FAILURE_LIMIT = { limit: 100, windowSeconds: 60 } as const;

/** An API key's name, and a share link's label: at most this many characters (ours, for the dashboard). */
export const NAME_MAX_LENGTH = 100;

/** Control characters (NUL, DEL, ...): refused in names, labels and URLs people type (PostgreSQL cannot store NUL). */
export const CONTROL_CHARACTERS = /\p{Cc}/u;

/**
 * Text from outside (a webhook receiver's answer, an error it caused) made fit to store and show:
 * control characters other than tab and newline become U+FFFD (PostgreSQL refuses NUL outright),
 * and so do lone surrogates.
 */
export function storableText(text: string): string {
  return text.toWellFormed().replace(/(?![\t\n])\p{Cc}/gu, "\uFFFD");
}

/**
 * A delivered file's name: one path segment, at most this many bytes of UTF-8: file systems take
 * 255, and the clients' partial download `<name>.part.etag` needs 10 more.
 */
export const FILE_NAME_MAX_BYTES = 245;

/** A table lists the notices posted about it in the last this many days (Part 6). */
export const NOTICE_DAYS = 90;

/** The parts of a failed or rejected publication leave storage this many days after the decision (Part 8). */
export const FAILED_PARTS_KEPT_DAYS = 7;

/** `limit` of the order list: 1 to 50, 20 when not given. */
export const ORDER_PAGE_SIZE = { min: 1, max: 50, default: 20 } as const;

/** How long a signed download link stays valid. Short: the API hands out a fresh one on every request. */
export const DOWNLOAD_LINK_TTL_SECONDS = 300;
