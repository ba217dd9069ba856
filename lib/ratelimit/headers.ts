import type { RateLimitDecision } from "./decision";

/**
 * Response headers for a decision, in the structured-field form of draft-ietf-httpapi-ratelimit-headers-11
 * (May 2026): `RateLimit-Policy: "<name>";q=<quota>;w=<window s>` and `RateLimit: "<name>";r=<remaining>;t=<s>`,
 * plus `Retry-After` (RFC 9110) when refused.
 */
export function rateLimitHeaders(
  decision: RateLimitDecision,
  windowSeconds: number,
  policyName = "default",
): Record<string, string> {
  const name = structuredString(policyName);
  // The draft says Retry-After should not point earlier than the end of the effective window, so a refusal uses
  // the same number for both.
  const seconds = decision.allowed
    ? Math.max(0, Math.ceil((decision.resetAt - Date.now()) / 1000))
    : decision.retryAfterSeconds;
  const headers: Record<string, string> = {
    "RateLimit-Policy": `${name};q=${decision.limit};w=${windowSeconds}`,
    RateLimit: `${name};r=${decision.remaining};t=${seconds}`,
  };
  if (!decision.allowed) headers["Retry-After"] = String(decision.retryAfterSeconds);
  return headers;
}

/** An sf-string (RFC 9651): printable ASCII, with `"` and `\` escaped. */
function structuredString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new TypeError(`Policy name must be printable ASCII: ${value}`);
  return `"${value.replace(/["\\]/g, "\\$&")}"`;
}
