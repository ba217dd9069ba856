import { PrismaAdapter } from "@next-auth/prisma-adapter";
import type { NextAuthOptions } from "next-auth";
import EmailProvider from "next-auth/providers/email";
import { db } from "../db/client";
import { appSecret } from "../secrets";
import { processSingleton } from "../singleton";
import { authBaseUrl } from "../site";
import { SIGNIN_LINK_MINUTES } from "./constants";
import { normaliseEmailIdentifier } from "./email-identifier";
import { mailDelivery, sendSignInMailLater, signInMail } from "./mail";

const SESSION_DAYS = 30;

export const AUTH_PAGES = {
  signIn: "/signin",
  verifyRequest: "/signin/check-email",
  error: "/signin/error",
} as const;

/**
 * next-auth's options, built on first use (the Prisma client must not be created at build time).
 * Sessions live in the database, so signing out or deleting a session ends it at once.
 */
export function authOptions(): NextAuthOptions {
  return processSingleton("auth:options", (): NextAuthOptions => ({
    secret: appSecret(),
    // The Prisma 7 client generated into lib/db is the client this adapter was written for, under another import path.
    adapter: PrismaAdapter(db() as unknown as Parameters<typeof PrismaAdapter>[0]),
    session: { strategy: "database", maxAge: SESSION_DAYS * 24 * 60 * 60, updateAge: 24 * 60 * 60 },
    pages: AUTH_PAGES,
    providers: [
      EmailProvider({
        maxAge: SIGNIN_LINK_MINUTES * 60,
        from: mailDelivery().mode === "smtp" ? process.env.EMAIL_FROM : undefined,
        normalizeIdentifier: normaliseEmailIdentifier,
        async sendVerificationRequest({ identifier, url }) {
          // Only buyers get an e-mail; anyone else gets the very same answer and nothing is sent. The
          // e-mail leaves off the request path, so the answer never waits for the mail server either.
          if (await isBuyer(identifier)) {
            sendSignInMailLater(signInMail(identifier, confirmationUrl(url), SIGNIN_LINK_MINUTES));
          }
        },
      }),
    ],
    callbacks: {
      // Accounts exist for buyers only (created with their orders by the operator). A request for
      // any other address takes the same path as a buyer's (sendVerificationRequest just sends
      // nothing), so the form does not tell who is a buyer; and a link can never create an account.
      async signIn({ user, email }) {
        if (email?.verificationRequest) return true;
        return isBuyer(user.email ?? "");
      },
      session({ session, user }) {
        return { ...session, user: { ...session.user, id: user.id, email: user.email } };
      },
    },
  }));
}

async function isBuyer(email: string): Promise<boolean> {
  return (await db().user.count({ where: { email } })) > 0;
}

/**
 * The e-mailed link opens a confirmation page rather than next-auth's callback itself: mail
 * scanners that fetch links would otherwise use up the single-use token before the buyer clicks.
 */
function confirmationUrl(callbackUrl: string): string {
  const callback = new URL(callbackUrl);
  return `${authBaseUrl()}/signin/confirm?${callback.searchParams.toString()}`;
}
