import type { NextApiRequest, NextApiResponse } from "next";
import NextAuth from "next-auth";
import { rateLimitHeaders } from "@/lib/ratelimit";
import { MAIL_NOT_CONFIGURED, mailDelivery } from "@/lib/auth/mail";
import { AUTH_PAGES, authOptions } from "@/lib/auth/options";
import { checkSignInLimits, clientIp } from "@/lib/auth/signin-limits";
import { authBaseUrl } from "@/lib/site";

/**
 * next-auth, behind two guards on the one request that sends e-mail (POST signin/email): a
 * server without SMTP in production refuses it with a clear error, and the per-address and
 * per-IP limits apply. A Pages API route so the client's socket address is at hand.
 */
export default async function auth(req: NextApiRequest, res: NextApiResponse) {
  // next-auth reads only the first two segments: signin/email/anything is the same action.
  const [action, provider] = ([] as string[]).concat(req.query.nextauth ?? []);
  if (req.method === "POST" && action === "signin" && provider === "email") {
    if (mailDelivery().mode === "unconfigured") {
      console.error(`Sign-in refused: ${MAIL_NOT_CONFIGURED}`);
      return refuse(req, res, 503, "EmailNotConfigured");
    }
    const email = typeof req.body?.email === "string" ? req.body.email : "";
    const refusal = await checkSignInLimits(email, clientIp(req));
    if (refusal) {
      const { decision, windowSeconds, scope } = refusal;
      for (const [name, value] of Object.entries(rateLimitHeaders(decision, windowSeconds, `signin-${scope}`))) {
        res.setHeader(name, value);
      }
      return refuse(req, res, 429, "RateLimited");
    }
  }
  return NextAuth(req, res, authOptions());
}

/** Back to the sign-in page with an error code: JSON for next-auth's client, a redirect for a plain form. */
function refuse(req: NextApiRequest, res: NextApiResponse, status: number, error: string) {
  const url = `${authBaseUrl()}${AUTH_PAGES.signIn}?error=${error}`;
  if (req.body?.json === "true") return res.status(status).json({ url });
  res.setHeader("Location", url);
  return res.status(303).end();
}
