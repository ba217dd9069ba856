import type { IncomingMessage } from "node:http";
import { normaliseEmailIdentifier } from "./email-identifier";
import { createRateLimiter, type RateLimitDecision, type RateLimiter } from "../ratelimit";

/**
 * Sign-in e-mails are rate limited twice, so nobody can flood an inbox or use the app to spam:
 * per address (5 per 15 minutes) and per client IP (30 per 15 minutes, room for an office behind
 * one NAT). Same limiter and backends as the API (lib/ratelimit).
 */
export const SIGNIN_LIMITS = {
  perEmail: { limit: 5, windowSeconds: 15 * 60 },
  perIp: { limit: 30, windowSeconds: 15 * 60 },
} as const;

const shared = globalThis as unknown as { signInLimiters?: { email: RateLimiter; ip: RateLimiter } };
function limiters() {
  return (shared.signInLimiters ??= {
    email: createRateLimiter({ prefix: "ratelimit:signin:email", ...SIGNIN_LIMITS.perEmail }),
    ip: createRateLimiter({ prefix: "ratelimit:signin:ip", ...SIGNIN_LIMITS.perIp }),
  });
}

/** Counts one sign-in request; the first refusal (IP before e-mail) is returned, or undefined when allowed. */
export async function checkSignInLimits(
  email: string,
  ip: string,
): Promise<{ scope: "ip" | "email"; decision: RateLimitDecision; windowSeconds: number } | undefined> {
  const byIp = await limiters().ip.check(ip);
  if (!byIp.allowed) return { scope: "ip", decision: byIp, windowSeconds: SIGNIN_LIMITS.perIp.windowSeconds };
  const byEmail = await limiters().email.check(emailKey(email));
  if (!byEmail.allowed)
    return { scope: "email", decision: byEmail, windowSeconds: SIGNIN_LIMITS.perEmail.windowSeconds };
  return undefined;
}

/** The address as next-auth will use it; a malformed one (refused by next-auth anyway) as typed. */
function emailKey(email: string): string {
  try {
    return normaliseEmailIdentifier(email);
  } catch {
    return email.normalize("NFKC").trim().toLowerCase();
  }
}

/**
 * The client's address: the socket's peer, or, behind a reverse proxy that says so with
 * TRUST_PROXY=true, the last address that proxy appended to X-Forwarded-For (earlier entries
 * are whatever the client sent and cannot be trusted).
 */
export function clientIp(req: IncomingMessage, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TRUST_PROXY === "true") {
    const forwarded = req.headers["x-forwarded-for"];
    const last = (Array.isArray(forwarded) ? forwarded.join(",") : (forwarded ?? "")).split(",").pop()?.trim();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}
