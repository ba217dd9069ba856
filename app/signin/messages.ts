import { SIGNIN_LINK_MINUTES } from "@/lib/auth/constants";

/** What each sign-in error code (next-auth's, and ours) means for the person signing in. */
const MESSAGES: Record<string, string> = {
  Verification: `This sign-in link has expired or has already been used. Links work once, for ${SIGNIN_LINK_MINUTES} minutes. Ask for a new one below.`,
  RateLimited: "Too many sign-in requests from this address or network. Wait a few minutes, then try again.",
  EmailNotConfigured:
    "E-mail sign-in is not available: this server has no mail server configured. Its operator must set EMAIL_SERVER and EMAIL_FROM.",
  EmailSignin: "We could not send the sign-in e-mail. Check the address and try again in a moment.",
  SessionRequired: "Please sign in to see that page.",
  AccessDenied: "This address has no buyer account. Sign in with the address your datasets were bought with.",
  Network: "The server could not be reached. Check your connection and try again.",
};

export function signInErrorMessage(code: string): string {
  return MESSAGES[code] ?? "Sign-in did not work. Please try again.";
}

/** A known error code, or "Default": the query string is the client's, never echoed as it is. */
export function knownSignInError(code: string | undefined): string {
  return code && Object.hasOwn(MESSAGES, code) ? code : "Default";
}
