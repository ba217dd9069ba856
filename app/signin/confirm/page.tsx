import type { Metadata } from "next";
import Link from "next/link";
import { buttonClass } from "@/components/ui";
import { checkSignInLink, returnPathOfLink, type SignInLinkState } from "@/lib/auth/sign-in-link";
import { CLIENT_IP_HEADER } from "@/lib/security/header";
import { headers } from "next/headers";
import { SIGNIN_LINK_MINUTES } from "@/lib/auth/constants";

export const metadata: Metadata = { title: "Confirm sign-in" };

const NOT_USABLE: Record<Exclude<SignInLinkState, "usable">, { title: string; detail: string }> = {
  expired: {
    title: "This sign-in link has expired",
    detail: `Links work for ${SIGNIN_LINK_MINUTES} minutes. Ask for a new one: it takes a few seconds.`,
  },
  used_or_invalid: {
    title: "This sign-in link no longer works",
    detail: "It has been used already (each link works once), or it was not copied whole. Ask for a new one.",
  },
};

/**
 * The e-mailed link lands here, and only the button below uses the single-use token: mail
 * scanners that open links would otherwise spend it before the buyer clicks (and hold the session
 * it opens). The page checks the link without using it, so a used or expired one offers a new
 * link straight away. Its Sign in is the page's one: the header offers none here.
 */
export default async function ConfirmSignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { token, email, callbackUrl } = await searchParams;
  if (typeof token !== "string" || typeof email !== "string" || !token || !email) {
    return (
      <div className="mx-auto max-w-md space-y-4">
        <h1 className="text-2xl font-bold tracking-tight">Sign in to Dataset Access</h1>
        <p className="text-slate-700">This sign-in link is incomplete. Copy the whole link from the e-mail.</p>
      </div>
    );
  }
  const state = await checkSignInLink(email, token, (await headers()).get(CLIENT_IP_HEADER));
  if (state !== "usable") {
    const newLink = `/signin?${new URLSearchParams({ email: email.slice(0, 320), callbackUrl: returnPathOfLink(callbackUrl) })}`;
    return (
      <div className="mx-auto max-w-md space-y-4" data-testid="signin-link-state" data-state={state}>
        <h1 className="text-2xl font-bold tracking-tight">{NOT_USABLE[state].title}</h1>
        <p className="text-slate-700">{NOT_USABLE[state].detail}</p>
        <Link href={newLink} className={buttonClass("primary")}>
          Get a new sign-in link
        </Link>
      </div>
    );
  }
  const callback = new URLSearchParams({
    ...(typeof callbackUrl === "string" ? { callbackUrl } : {}),
    token,
    email,
  });
  return (
    <div className="mx-auto max-w-md space-y-4" data-testid="signin-link-state" data-state={state}>
      <h1 className="text-2xl font-bold tracking-tight">Sign in to Dataset Access</h1>
      <p className="text-slate-700">
        Continue as <strong>{email}</strong>.
      </p>
      {/* A form, not a link: a mail scanner that follows a page's links never submits it. A full
          POST to next-auth's callback (an API route; it reads the token from the query), not a
          client-side transition. The button has the focus: Enter signs in too. */}
      <form method="post" action={`/api/auth/callback/email?${callback}`}>
        <button type="submit" className={buttonClass("primary")} autoFocus data-testid="confirm-sign-in">
          Sign in
        </button>
      </form>
      <p className="text-sm text-slate-600">
        This one click keeps the link for you: programs that check links in e-mails open them too, and would use it up.
      </p>
    </div>
  );
}
