import type { Metadata } from "next";
import Link from "next/link";
import { linkClass } from "@/components/ui";
import { SIGNIN_LINK_MINUTES } from "@/lib/auth/constants";
import { mailDelivery } from "@/lib/auth/mail";

export const metadata: Metadata = { title: "Check your e-mail" };

export default async function CheckEmailPage({ searchParams }: { searchParams: Promise<{ email?: string }> }) {
  const { email } = await searchParams;
  return (
    <div className="mx-auto max-w-md space-y-4">
      <h1 className="text-2xl font-bold tracking-tight">Check your e-mail</h1>
      <p className="text-slate-700">
        If {email ? <strong>{email}</strong> : "that address"} belongs to a buyer account, a sign-in link is on its way.
        It works once and expires in {SIGNIN_LINK_MINUTES} minutes.
      </p>
      <p className="text-sm text-slate-600">
        Nothing arrived? Check your spam folder, make sure it is the address your datasets were bought with, or{" "}
        <Link href="/signin" className={linkClass}>
          ask for a new link
        </Link>
        .
      </p>
      {mailDelivery().mode === "dev-mailbox" && (
        <p className="text-sm text-slate-600">
          Development server without SMTP: the link is in the server log and in the{" "}
          <Link href="/dev/mailbox" className={linkClass}>
            development mailbox
          </Link>
          .
        </p>
      )}
    </div>
  );
}
