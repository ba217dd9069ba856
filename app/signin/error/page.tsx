import type { Metadata } from "next";
import Link from "next/link";
import { buttonClass } from "@/components/ui";
import { knownSignInError, signInErrorMessage } from "../messages";

export const metadata: Metadata = { title: "Sign-in failed" };

/** next-auth sends failed sign-ins here; "Verification" is a used or expired link. */
export default async function SignInErrorPage({ searchParams }: { searchParams: Promise<{ error?: string }> }) {
  const error = knownSignInError((await searchParams).error);
  const expiredLink = error === "Verification";
  return (
    <div className="mx-auto max-w-md space-y-4" data-testid="signin-error" data-error={error}>
      <h1 className="text-2xl font-bold tracking-tight">
        {expiredLink ? "This sign-in link no longer works" : "Sign-in failed"}
      </h1>
      <p className="text-slate-700">{signInErrorMessage(error)}</p>
      <Link href="/signin" className={buttonClass("primary")}>
        Get a new sign-in link
      </Link>
    </div>
  );
}
