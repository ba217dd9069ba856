import type { Metadata } from "next";
import Link from "next/link";
import { buttonClass, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { formatDate } from "@/lib/format";
import {
  SECURITY_EVENT_KINDS,
  SECURITY_EVENT_LABELS,
  listSecurityEvents,
  type SecurityEventKind,
} from "@/lib/security/log";

export const metadata: Metadata = { title: "Security log" };

const ACTORS: Record<string, string> = { session: "You (dashboard)", operator: "Operator", system: "System" };

export default async function SecurityLogPage({ searchParams }: { searchParams: Promise<{ kind?: string }> }) {
  const buyer = await requireBuyer("/security");
  const requested = (await searchParams).kind;
  const kind = SECURITY_EVENT_KINDS.find((known) => known === requested) as SecurityEventKind | undefined;
  const events = await listSecurityEvents(buyer.id, { kind });
  const filterLink = (value?: SecurityEventKind) => (value ? `/security?kind=${value}` : "/security");
  return (
    <div className="space-y-6">
      <header className="flex flex-wrap items-end justify-between gap-4">
        <div className="space-y-2">
          <h1 className="text-2xl font-bold tracking-tight">Security log</h1>
          <p className="max-w-2xl text-slate-600">
            Sign-ins, keys and share links of your account: what happened, when, who did it and from which address. Kept
            one year.
          </p>
        </div>
        <a href={`/security/export${kind ? `?kind=${kind}` : ""}`} className={buttonClass("secondary", "sm")} download>
          Export CSV
        </a>
      </header>
      <nav aria-label="Filter by event" className="flex flex-wrap gap-2 text-sm">
        {[undefined, ...SECURITY_EVENT_KINDS].map((value) => (
          <Link
            key={value ?? "all"}
            href={filterLink(value)}
            aria-current={value === kind ? "page" : undefined}
            className={`rounded-full border px-3 py-1 ${value === kind ? "border-slate-900 bg-slate-900 text-white" : "border-slate-300 bg-white"}`}
          >
            {value ? SECURITY_EVENT_LABELS[value] : "All events"}
          </Link>
        ))}
      </nav>
      {events.length === 0 ? (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
          Nothing recorded{kind ? " of this kind" : ""} yet.{" "}
          {kind && (
            <Link href="/security" className={linkClass}>
              Show all events
            </Link>
          )}
        </p>
      ) : (
        <ul
          className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white"
          data-testid="security-log"
        >
          {events.map((event) => (
            <li key={event.id} className="space-y-1 p-4 text-sm" data-testid="security-event" data-kind={event.kind}>
              <div className="flex flex-wrap items-baseline justify-between gap-2">
                <span className="font-medium">{SECURITY_EVENT_LABELS[event.kind]}</span>
                <time dateTime={event.createdAt.toISOString()} className="text-slate-600">
                  {formatDate(event.createdAt)}
                </time>
              </div>
              <p className="break-words text-slate-700">{event.detail}</p>
              <p className="text-xs text-slate-500">
                {ACTORS[event.actor] ?? event.actor}
                {event.ip ? ` · ${event.ip}` : ""}
                {event.count > 1 ? ` · ${event.count} times, last ${formatDate(event.lastAt)}` : ""}
              </p>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
