import type { Metadata } from "next";
import Link from "next/link";
import { buttonClass, inputClass, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { formatDate } from "@/lib/format";
import { SECURITY_LOG_INTRO } from "@/lib/docs/page-intros";
import {
  SECURITY_EVENT_GROUPS,
  SECURITY_EVENT_KINDS,
  SECURITY_EVENT_LABELS,
  listSecurityEvents,
  type SecurityEventKind,
} from "@/lib/security/log";

export const metadata: Metadata = { title: "Security log" };

export default async function SecurityLogPage({ searchParams }: { searchParams: Promise<{ kind?: string }> }) {
  const buyer = await requireBuyer("/security");
  const requested = (await searchParams).kind;
  const kind = SECURITY_EVENT_KINDS.find((known) => known === requested) as SecurityEventKind | undefined;
  const events = await listSecurityEvents(buyer.id, { kind });
  return (
    <div className="space-y-6">
      <header className="flex flex-wrap items-end justify-between gap-4">
        <div className="space-y-2">
          <h1 className="text-2xl font-bold tracking-tight">Security log</h1>
          <p className="max-w-2xl text-slate-600">{SECURITY_LOG_INTRO}</p>
        </div>
        <a href={`/security/export${kind ? `?kind=${kind}` : ""}`} className={buttonClass("secondary", "sm")} download>
          Export CSV
        </a>
      </header>
      {/* One select, grouped: 17 chips took 11 rows on a phone. A plain GET form, so it works without JavaScript. */}
      <form method="get" action="/security" className="flex flex-wrap items-end gap-2 text-sm" role="search">
        <div className="space-y-1">
          <label htmlFor="security-kind" className="block font-medium">
            Show
          </label>
          <select id="security-kind" name="kind" defaultValue={kind ?? ""} className={inputClass}>
            <option value="">All events</option>
            {SECURITY_EVENT_GROUPS.map((group) => (
              <optgroup key={group.name} label={group.name}>
                {group.kinds.map((value) => (
                  <option key={value} value={value}>
                    {SECURITY_EVENT_LABELS[value]}
                  </option>
                ))}
              </optgroup>
            ))}
          </select>
        </div>
        <button type="submit" className={buttonClass("secondary")}>
          Filter
        </button>
      </form>
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
                {event.actorName}
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
