import type { DailyUsage, UsageOutcome } from "@/lib/keys/usage";

const SERIES: { outcome: UsageOutcome; label: string; color: string }[] = [
  { outcome: "2xx", label: "Success (2xx)", color: "#16a34a" },
  { outcome: "4xx", label: "Client errors (4xx)", color: "#d97706" },
  { outcome: "429", label: "Rate limited (429)", color: "#7c3aed" },
  { outcome: "5xx", label: "Server errors (5xx)", color: "#dc2626" },
];

const BAR = 10;
const HEIGHT = 64;

/**
 * API answers per day, stacked by outcome: a server-rendered SVG that scales to its box (readable
 * at 390 px), described for screen readers, with the numbers in a table behind a disclosure.
 */
export function UsageChart({ days, label }: { days: DailyUsage[]; label: string }) {
  const totals = days.map((day) => SERIES.reduce((sum, series) => sum + day[series.outcome], 0));
  const max = Math.max(1, ...totals);
  const total = totals.reduce((sum, value) => sum + value, 0);
  const summary = `${label}: ${total.toLocaleString("en")} requests in the last ${days.length} days, at most ${max.toLocaleString("en")} a day.`;
  return (
    <figure className="space-y-2" data-testid="usage-chart" data-total={total}>
      <svg
        viewBox={`0 0 ${days.length * BAR} ${HEIGHT}`}
        preserveAspectRatio="none"
        className="h-16 w-full rounded bg-slate-50"
        role="img"
        aria-label={summary}
      >
        {days.map((day, index) => {
          let top = HEIGHT;
          return (
            <g key={day.day}>
              <title>{`${day.day}: ${totals[index]} requests`}</title>
              {SERIES.map((series) => {
                const height = (day[series.outcome] / max) * (HEIGHT - 4);
                if (height <= 0) return null;
                top -= height;
                return (
                  <rect
                    key={series.outcome}
                    x={index * BAR + 1}
                    y={top}
                    width={BAR - 2}
                    height={height}
                    fill={series.color}
                  />
                );
              })}
            </g>
          );
        })}
      </svg>
      <figcaption className="flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-600">
        {SERIES.map((series) => (
          <span key={series.outcome} className="inline-flex items-center gap-1">
            {/* An SVG swatch: the Content-Security-Policy allows no inline styles. */}
            <svg aria-hidden="true" width="8" height="8" viewBox="0 0 8 8">
              <rect width="8" height="8" rx="1" fill={series.color} />
            </svg>
            {series.label}
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
                {SERIES.map((series) => (
                  <th key={series.outcome} scope="col" className="pr-3">
                    {series.outcome}
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
                  {SERIES.map((series) => (
                    <td key={series.outcome} className="pr-3 tabular-nums">
                      {day[series.outcome]}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
