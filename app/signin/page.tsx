import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { Notice } from "@/components/ui";
import { MAIL_NOT_CONFIGURED, mailDelivery } from "@/lib/auth/mail";
import { safeReturnPath } from "@/lib/auth/return-to";
import { currentBuyer } from "@/lib/auth/session";
import { knownSignInError } from "./messages";
import { SignInForm } from "./sign-in-form";

export const metadata: Metadata = { title: "Sign in" };

export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[]>>;
}) {
  const params = await searchParams;
  const returnTo = safeReturnPath(params.callbackUrl);
  if (await currentBuyer()) redirect(returnTo);
  const error = typeof params.error === "string" ? knownSignInError(params.error) : undefined;
  const unconfigured = mailDelivery().mode === "unconfigured";
  // Sent here from a protected page (requireBuyer adds callbackUrl), or after signing out.
  const continuing = typeof params.callbackUrl === "string" && returnTo !== "/";
  const signedOut = params.signedOut !== undefined;
  const email = typeof params.email === "string" ? params.email.slice(0, 320) : "";
  return (
    <div className="mx-auto max-w-md space-y-6">
      <header className="space-y-2">
        <h1 className="text-2xl font-bold tracking-tight">Sign in</h1>
        <p className="text-slate-600">
          We e-mail you a link that signs you in: no password. It is the only way to manage your API keys.
        </p>
      </header>
      {signedOut && (
        <Notice tone="success">
          <span data-testid="signed-out">You are signed out.</span>
        </Notice>
      )}
      {continuing && !signedOut && (
        <Notice tone="info">
          <span data-testid="sign-in-to-continue">Sign in to continue to {returnTo}.</span>
        </Notice>
      )}
      <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
        {unconfigured ? (
          <Notice tone="error">{MAIL_NOT_CONFIGURED}</Notice>
        ) : (
          <SignInForm callbackUrl={returnTo} initialError={error} initialEmail={email} />
        )}
      </div>
    </div>
  );
}
