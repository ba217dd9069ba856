import type { NextApiRequest, NextApiResponse } from "next";
import { createHash } from "node:crypto";
import NextAuth from "next-auth";
import { sweepExpiredSignInRecords } from "@/lib/auth/cleanup";
import { MAIL_NOT_CONFIGURED, mailDelivery } from "@/lib/auth/mail";
import { AUTH_PAGES, authOptions } from "@/lib/auth/options";
import { clientIp, withSignInLimits } from "@/lib/auth/signin-limits";
import { authBaseUrl } from "@/lib/site";
import { logger } from "@/lib/log";
import { db } from "@/lib/db/client";
import { normaliseEmailIdentifier } from "@/lib/auth/email-identifier";
import { appSecret } from "@/lib/secrets";
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
  if (req.method === "GET" && action === "callback" && provider === "email") await noteRefusedLink(req, ip);
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

/**
 * A sign-in link that will be refused (used, expired or altered) goes into the security log of the
 * account it names, before next-auth looks at it: next-auth itself only redirects to its error page.
 */
async function noteRefusedLink(req: NextApiRequest, ip: string): Promise<void> {
  const token = typeof req.query.token === "string" ? req.query.token : "";
  let email: string;
  try {
    email = normaliseEmailIdentifier(typeof req.query.email === "string" ? req.query.email : "");
  } catch {
    return; // not an address: no account to log it for
  }
  if (!token) return;
  const buyer = await db().user.findUnique({ where: { email }, select: { id: true } });
  if (!buyer) return;
  // next-auth stores sha256(token + secret).
  const hashed = createHash("sha256").update(`${token}${appSecret()}`).digest("hex");
  const stored = await db().verificationToken.findUnique({
    where: { identifier_token: { identifier: email, token: hashed } },
    select: { expires: true },
  });
  if (stored && stored.expires > new Date()) return;
  await recordSecurityEvent(
    buyer.id,
    "sign_in_link_refused",
    { actor: "session", ip },
    {
      detail: stored ? "An expired sign-in link was used" : "A used or unknown sign-in link was used",
    },
  );
}
