import { createHash } from "node:crypto";
import { db } from "../db/client";
import { appSecret } from "../secrets";
import { recordSecurityEvent } from "../security/log";
import { normaliseEmailIdentifier } from "./email-identifier";
import { safeReturnPath } from "./return-to";

/**
 * A mailed sign-in link, looked at without using it up. next-auth stores the SHA-256 of the token
 * followed by the secret and deletes the row when the link is used, so a used link and a tampered
 * one look the same: neither is in the table.
 */
export type SignInLinkState = "usable" | "expired" | "used_or_invalid";

/**
 * The state of the link for `rawEmail` and `token`; one that will be refused goes into the
 * security log of the account it names (next-auth itself only redirects to its error page).
 */
export async function checkSignInLink(
  rawEmail: string,
  token: string,
  ip: string | null,
  now = new Date(),
): Promise<SignInLinkState> {
  let email: string;
  try {
    email = normaliseEmailIdentifier(rawEmail);
  } catch {
    return "used_or_invalid"; // not an address: no link and no account
  }
  const hashed = createHash("sha256").update(`${token}${appSecret()}`).digest("hex");
  const stored = await db().verificationToken.findUnique({
    where: { identifier_token: { identifier: email, token: hashed } },
    select: { expires: true },
  });
  const state: SignInLinkState = !stored ? "used_or_invalid" : stored.expires > now ? "usable" : "expired";
  if (state === "usable") return state;
  const buyer = await db().user.findUnique({ where: { email }, select: { id: true } });
  if (buyer) {
    await recordSecurityEvent(
      buyer.id,
      "sign_in_link_refused",
      { actor: "session", ip },
      { detail: state === "expired" ? "An expired sign-in link was used" : "A used or unknown sign-in link was used" },
    );
  }
  return state;
}

/**
 * The page a new link should lead back to: the path of the link's own callbackUrl (an absolute
 * URL of this site, as next-auth writes it), kept only if it is a local path.
 */
export function returnPathOfLink(callbackUrl: unknown): string {
  if (typeof callbackUrl !== "string") return "/orders";
  try {
    const url = new URL(callbackUrl, "http://link.invalid");
    return safeReturnPath(`${url.pathname}${url.search}${url.hash}`);
  } catch {
    return "/orders";
  }
}
