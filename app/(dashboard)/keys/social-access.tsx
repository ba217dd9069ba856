import Link from "next/link";
import { Badge, linkClass } from "@/components/ui";
import { now } from "@/lib/clock";
import { formatDate } from "@/lib/format";
import { UsageChart } from "@/components/usage-chart";
import { allowancePeriod, allowanceUsage, dailyReadsThisPeriod, type SocialAccessSettings } from "@/lib/social/access";

const READS_SERIES = [{ key: "reads", label: "Profile reads", color: "#2563eb" }];

/** Reads by the end of the period at the pace of its days so far (today counted as a whole day). */
function projectedReads(used: number, at: Date): number {
  const { start, end } = allowancePeriod(at);
  const daysInPeriod = Math.round((end.getTime() - start.getTime()) / 86_400_000);
  const daysSoFar = Math.floor((at.getTime() - start.getTime()) / 86_400_000) + 1;
  return Math.round((used / daysSoFar) * daysInPeriod);
}

/** The account's Social API access and this month's use of its allowance. */
export async function SocialAccessSummary({ buyerId, access }: { buyerId: string; access?: SocialAccessSettings }) {
  const at = now();
  const [usage, days] = access?.enabled
    ? await Promise.all([allowanceUsage(buyerId, access.monthlyAllowance, at), dailyReadsThisPeriod(buyerId, at)])
    : [undefined, []];
  const pace = usage && projectedReads(usage.used, at);
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
          <p className="text-sm text-slate-700" data-testid="social-pace">
            At this month&apos;s pace so far: about {pace!.toLocaleString("en")} reads by the end of the month
            {pace! > usage.allowance
              ? `, more than the allowance: reads would be refused before ${formatDate(usage.resetAt)}.`
              : ", within the allowance."}
          </p>
          <UsageChart
            days={days}
            label="Social API profile reads"
            series={READS_SERIES}
            unit="reads"
            period="this month"
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
