import type { ServerResponse } from "node:http";
import net from "node:net";
import type { NextAuthOptions } from "next-auth";
import { createRateLimiter, rateLimitHeaders, type RateLimitDecision, type RateLimiter } from "../ratelimit";
import { processSingleton } from "../singleton";
import { authBaseUrl } from "../site";
import { AUTH_PAGES } from "./options";

/**
 * Sign-in e-mails are rate limited three ways, so nobody can flood an inbox or use the app to
 * spam, and nobody can use up someone else's sign-ins (same limiter and backends as the API):
 * - per client network (30 per 15 minutes, room for an office behind one NAT);
 * - per address from one client network (5 per 15 minutes): what one client may ask for one
 *   address, so an attacker elsewhere uses up only their own share, never the buyer's;
 * - per address overall (20 per 15 minutes): the ceiling on what one inbox can receive, however
 *   many networks ask. Reaching it takes four networks acting together within the window.
 * A client network is the IPv4 address, or the IPv6 /64 (one host usually holds a whole /64).
 * Only requests that would send an e-mail count: see withSignInLimits.
 */
export const SIGNIN_LIMITS = {
  // SIGNIN_LIMIT_PER_IP raises the network's share where many people sign in from one address
  // (a large office, or the end-to-end suite signing in 40 times from 127.0.0.1).
  perIp: { limit: Number(process.env.SIGNIN_LIMIT_PER_IP) || 30, windowSeconds: 15 * 60 },
  perEmailAndIp: { limit: 5, windowSeconds: 15 * 60 },
  perEmail: { limit: 20, windowSeconds: 15 * 60 },
} as const;

type Scope = keyof typeof SIGNIN_LIMITS;
const POLICY_NAMES: Record<Scope, string> = {
  perIp: "signin-ip",
  perEmailAndIp: "signin-email-ip",
  perEmail: "signin-email",
};

function limiters(): Record<Scope, RateLimiter> {
  return processSingleton("ratelimit:signin", () => ({
    perIp: createRateLimiter({ prefix: "ratelimit:signin:ip", ...SIGNIN_LIMITS.perIp }),
    perEmailAndIp: createRateLimiter({ prefix: "ratelimit:signin:email-ip", ...SIGNIN_LIMITS.perEmailAndIp }),
    perEmail: createRateLimiter({ prefix: "ratelimit:signin:email", ...SIGNIN_LIMITS.perEmail }),
  }));
}

export type SignInRefusal = { policy: string; decision: RateLimitDecision; windowSeconds: number };

/**
 * Counts one sign-in e-mail for `email` (in its normal form) asked for from `ip`; the first
 * refusal (network, then address from that network, then address) is returned, or undefined
 * when allowed. A refused request counts toward no later limit.
 */
export async function checkSignInLimits(email: string, ip: string): Promise<SignInRefusal | undefined> {
  const network = clientNetwork(ip);
  const keys: Record<Scope, string> = { perIp: network, perEmailAndIp: `${email} ${network}`, perEmail: email };
  for (const scope of ["perIp", "perEmailAndIp", "perEmail"] as const) {
    const decision = await limiters()[scope].check(keys[scope]);
    if (!decision.allowed)
      return { policy: POLICY_NAMES[scope], decision, windowSeconds: SIGNIN_LIMITS[scope].windowSeconds };
  }
  return undefined;
}

/**
 * next-auth's options for one request from `ip`, with the limits counted where next-auth asks
 * whether to send a sign-in e-mail (the signIn callback with `verificationRequest`): after it has
 * checked the CSRF token and the address, before it stores a token or sends anything. So only a
 * request that would send an e-mail counts. A refused request gets next-auth's usual answer, the
 * sign-in page with error=RateLimited, plus the RateLimit and Retry-After headers.
 */
export function withSignInLimits(options: NextAuthOptions, ip: string, res: ServerResponse): NextAuthOptions {
  const signIn = options.callbacks?.signIn;
  return {
    ...options,
    callbacks: {
      ...options.callbacks,
      async signIn(params) {
        if (params.email?.verificationRequest) {
          // The address in next-auth's normal form (normalizeIdentifier), for buyers and everyone else alike.
          const email = params.account?.providerAccountId ?? params.user.email ?? "";
          const refusal = await checkSignInLimits(email, ip);
          if (refusal) {
            const { decision, windowSeconds, policy } = refusal;
            for (const [name, value] of Object.entries(rateLimitHeaders(decision, windowSeconds, policy))) {
              res.setHeader(name, value);
            }
            return `${authBaseUrl()}${AUTH_PAGES.signIn}?error=RateLimited`;
          }
        }
        return signIn ? signIn(params) : true;
      },
    },
  };
}

/**
 * The network a client address stands for in the limits: an IPv4 address as it is (also when
 * written IPv4-mapped, ::ffff:a.b.c.d), an IPv6 address as its /64, anything else as it is.
 */
export function clientNetwork(ip: string): string {
  const address = ip.replace(/%.*$/, ""); // an IPv6 zone (fe80::1%eth0) names the interface, not the host
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped && net.isIPv4(mapped[1]!)) return mapped[1]!;
  if (!net.isIPv6(address)) return ip;
  // The URL parser writes an IPv6 address in its one canonical form (lower case, `::` for the longest zero run).
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = "", tail] = canonical.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return `${groups.slice(0, 4).join(":")}::/64`;
}
