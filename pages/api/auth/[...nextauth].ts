import type { NextApiRequest, NextApiResponse } from "next";
import NextAuth from "next-auth";
import { sweepExpiredSignInRecords } from "@/lib/auth/cleanup";
import { MAIL_NOT_CONFIGURED, mailDelivery } from "@/lib/auth/mail";
import { AUTH_PAGES, authOptions } from "@/lib/auth/options";
import { withSignInLimits } from "@/lib/auth/signin-limits";
import { clientIp } from "@/lib/http/client-ip";
import { checkSignInLink } from "@/lib/auth/sign-in-link";
import { authBaseUrl } from "@/lib/site";
import { logger } from "@/lib/log";
import { recordSecurityEvent } from "@/lib/security/log";

/**
 * next-auth. A server without SMTP in production refuses the one request that sends e-mail
 * (POST signin/email) with a clear error; the sign-in limits are counted inside next-auth, once
 * it has checked that request (withSignInLimits). A Pages API route so the client's socket
 * address is at hand.
 */
export default async function auth(req: NextApiRequest, res: NextApiResponse) {
  sweepExpiredSignInRecords();
  // next-auth reads only the first two segments: signin/email/anything is the same action.
  const [action, provider] = ([] as string[]).concat(req.query.nextauth ?? []);
  if (req.method === "POST" && action === "signin" && provider === "email" && mailDelivery().mode === "unconfigured") {
    logger().error(`Sign-in refused: ${MAIL_NOT_CONFIGURED}`);
    const url = `${authBaseUrl()}${AUTH_PAGES.signIn}?error=EmailNotConfigured`;
    // JSON for next-auth's client, a redirect for a plain form.
    if (req.body?.json === "true") return res.status(503).json({ url });
    res.setHeader("Location", url);
    return res.status(303).end();
  }
  const ip = clientIp(req);
  if (req.method === "GET" && action === "callback" && provider === "email") {
    const { email, token } = req.query;
    // Logged before next-auth looks at it: next-auth itself only redirects to its error page.
    if (typeof email === "string" && typeof token === "string" && token) await checkSignInLink(email, token, ip);
  }
  const options = authOptions();
  options.events = {
    ...options.events,
    async signIn({ user }) {
      await recordSecurityEvent(
        user.id,
        "sign_in",
        { actor: "session", ip },
        { detail: "Signed in with an e-mailed link" },
      );
    },
  };
  return NextAuth(req, res, withSignInLimits(options, ip, res));
}
