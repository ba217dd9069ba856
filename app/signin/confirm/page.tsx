import type { Metadata } from "next";
import { buttonClass } from "@/components/ui";

export const metadata: Metadata = { title: "Confirm sign-in" };

/**
 * The e-mailed link lands here, and only the button below uses the single-use token: mail
 * scanners that open links would otherwise spend it before the buyer clicks.
 */
export default async function ConfirmSignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { token, email, callbackUrl } = await searchParams;
  const valid = typeof token === "string" && typeof email === "string";
  const callback = new URLSearchParams({
    ...(typeof callbackUrl === "string" ? { callbackUrl } : {}),
    token: String(token ?? ""),
    email: String(email ?? ""),
  });
  return (
    <div className="mx-auto max-w-md space-y-4">
      <h1 className="text-2xl font-bold tracking-tight">Sign in to Dataset Access</h1>
      {valid ? (
        <>
          <p className="text-slate-700">
            Continue as <strong>{email}</strong>.
          </p>
          {/* A full navigation to next-auth's callback (an API route), not a client-side transition. */}
          {}
          <a href={`/api/auth/callback/email?${callback}`} className={buttonClass("primary")}>
            Sign in
          </a>
        </>
      ) : (
        <p className="text-slate-700">This sign-in link is incomplete. Copy the whole link from the e-mail.</p>
      )}
    </div>
  );
}
