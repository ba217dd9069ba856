/**
 * The one normal form of a sign-in address, used both by next-auth (normalizeIdentifier: the
 * address the link is mailed to and the account is found by) and by the per-address rate limit,
 * so that no variant of an address escapes the limit. Throws for anything that is not a single
 * plain address (no quotes, commas, spaces, control characters such as NUL, or second @).
 */
export function normaliseEmailIdentifier(raw: string): string {
  const email = raw.normalize("NFKC").trim().toLowerCase();
  if (!/^[^\s\p{Cc}@",;<>()\\]+@[^\s\p{Cc}@",;<>()\\]+\.[^\s\p{Cc}@",;<>()\\]+$/u.test(email)) {
    throw new Error("Invalid email address format.");
  }
  return email;
}
