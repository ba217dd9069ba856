import { DailyBars, type BarDay, type BarSeries } from "./daily-bars";

/** One stacked series: `key` is the field of each day that holds its count. */
export type ChartSeries = BarSeries;
export type ChartDay = BarDay;

/** API answers by outcome (lib/keys/usage.ts's DailyUsage fields). */
const OUTCOME_SERIES: ChartSeries[] = [
  { key: "2xx", label: "Success (2xx)", color: "#16a34a" },
  { key: "4xx", label: "Client errors (4xx)", color: "#d97706" },
  { key: "429", label: "Rate limited (429)", color: "#7c3aed" },
  { key: "5xx", label: "Server errors (5xx)", color: "#dc2626" },
];
const count = (day: ChartDay, key: string) => Number(day[key] ?? 0);

/**
 * Counts per day, stacked by series (by default API answers by outcome): bars with a date axis, a
 * scale and tooltips (readable at 390 px), a sentence for screen readers, the numbers in a table
 * behind a disclosure, and with no counts at all a plain sentence instead of an empty box.
 */
export function UsageChart({
  days,
  label,
  series = OUTCOME_SERIES,
  unit = "requests",
  period = `in the last ${days.length} days`,
}: {
  days: ChartDay[];
  label: string;
  series?: ChartSeries[];
  unit?: string;
  period?: string;
}) {
  const totals = days.map((day) => series.reduce((sum, { key }) => sum + count(day, key), 0));
  const max = Math.max(1, ...totals);
  const total = totals.reduce((sum, value) => sum + value, 0);
  const summary = `${label}: ${total.toLocaleString("en")} ${unit} ${period}, at most ${max.toLocaleString("en")} a day.`;
  return (
    <figure className="space-y-2" data-testid="usage-chart" data-total={total}>
      {total === 0 ? (
        <p className="rounded border border-dashed border-slate-300 px-3 py-6 text-center text-sm text-slate-600">
          No {unit} yet {period}. They appear here within seconds of being made.
        </p>
      ) : (
        <div role="img" aria-label={summary}>
          <DailyBars days={days} series={series} unit={unit} />
        </div>
      )}
      {total > 0 && (
        <>
          <figcaption className="flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-600">
            {series.map(({ key, label: seriesLabel, color }) => (
              <span key={key} className="inline-flex items-center gap-1">
                {/* An SVG swatch: the Content-Security-Policy allows no inline styles. */}
                <svg aria-hidden="true" width="8" height="8" viewBox="0 0 8 8">
                  <rect width="8" height="8" rx="1" fill={color} />
                </svg>
                {seriesLabel}
              </span>
            ))}
          </figcaption>
          <details className="text-xs">
            <summary className="cursor-pointer text-slate-600">Show the numbers</summary>
            {/* Focusable, so the scrolling box can be scrolled with the keyboard. */}
            <div className="mt-2 max-h-64 overflow-auto" tabIndex={0} role="region" aria-label={`${label}, per day`}>
              <table className="min-w-full text-left">
                <caption className="sr-only">{summary}</caption>
                <thead>
                  <tr>
                    <th scope="col" className="pr-3">
                      Day (UTC)
                    </th>
                    {series.map(({ key, label: seriesLabel }) => (
                      <th key={key} scope="col" className="pr-3">
                        {series.length === 1 ? seriesLabel : key}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {days.map((day) => (
                    <tr key={day.day}>
                      <th scope="row" className="pr-3 font-normal">
                        {day.day}
                      </th>
                      {series.map(({ key }) => (
                        <td key={key} className="pr-3 tabular-nums">
                          {count(day, key)}
                        </td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </figure>
  );
}
