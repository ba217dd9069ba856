import Link from "next/link";
import { Badge, linkClass } from "@/components/ui";
import { now } from "@/lib/clock";
import { formatDate } from "@/lib/format";
import { allowanceUsage, type SocialAccessSettings } from "@/lib/social/access";

/** The account's Social API access and this month's use of its allowance. */
export async function SocialAccessSummary({ buyerId, access }: { buyerId: string; access?: SocialAccessSettings }) {
  const usage = access?.enabled ? await allowanceUsage(buyerId, access.monthlyAllowance, now()) : undefined;
  return (
    <section
      aria-labelledby="social-heading"
      className="space-y-3 rounded-lg border border-slate-200 bg-white p-5"
      data-testid="social-access"
    >
      <div className="flex flex-wrap items-center gap-3">
        <h2 id="social-heading" className="text-lg font-semibold">
          Social API
        </h2>
        <Badge tone={access?.enabled ? "green" : "slate"}>{access?.enabled ? "Enabled" : "Not enabled"}</Badge>
      </div>
      {access?.enabled && usage ? (
        <>
          <p className="text-sm text-slate-700" data-testid="social-usage">
            {usage.used.toLocaleString("en")} of {usage.allowance.toLocaleString("en")} profile reads used this month,{" "}
            <strong>{usage.remaining.toLocaleString("en")} left</strong>. The allowance resets{" "}
            {formatDate(usage.resetAt)}. Rate: {access.ratePerMinute.toLocaleString("en")} requests per minute.
          </p>
          {/* A native meter: no inline style, which the Content-Security-Policy would block. */}
          <meter
            aria-label="Social allowance used this month"
            min={0}
            max={usage.allowance}
            value={usage.used}
            className="h-2 w-full"
          />
          <p className="text-sm text-slate-600">
            Use a separate <code>scrape:read</code> key. See the{" "}
            <Link href="/docs/api" className={linkClass}>
              API reference
            </Link>
            .
          </p>
        </>
      ) : (
        <p className="text-sm text-slate-600">
          Social API access is a separate option for reading social-platform profiles. It is not enabled for this
          account; your account manager can enable it.
        </p>
      )}
    </section>
  );
}
