import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { linkClass } from "@/components/ui";
import { devMailboxMessages, mailDelivery } from "@/lib/auth/mail";
import { formatDate } from "@/lib/format";

export const metadata: Metadata = { title: "Development mailbox", robots: { index: false } };

/** Sign-in e-mails of a development server without SMTP. Does not exist anywhere else. */
export default function DevMailboxPage() {
  if (mailDelivery().mode !== "dev-mailbox") notFound();
  const messages = devMailboxMessages();
  return (
    <div className="space-y-6">
      <header className="space-y-2">
        <h1 className="text-2xl font-bold tracking-tight">Development mailbox</h1>
        <p className="text-slate-600">
          This development server has no SMTP server (EMAIL_SERVER), so sign-in e-mails are kept here and printed in the
          server log. This page does not exist in production.
        </p>
      </header>
      {messages.length === 0 ? (
        <p className="text-slate-600">No e-mails yet.</p>
      ) : (
        <ul className="space-y-3">
          {messages.map((message) => (
            <li
              key={message.sentAt.toISOString() + message.to}
              className="rounded-lg border border-slate-200 bg-white p-4"
            >
              <p className="text-sm text-slate-500">
                {formatDate(message.sentAt)} · to {message.to}
              </p>
              <p className="font-medium">{message.subject}</p>
              <a href={message.url} className={`${linkClass} text-sm break-all`}>
                {message.url}
              </a>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
