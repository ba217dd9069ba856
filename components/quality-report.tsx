import type { ReactNode } from "react";
import type { Check, Quality, QualityReport as Report } from "@/lib/schemas/quality";
import { Badge } from "./ui";

const count = (value: number) => value.toLocaleString("en-US");
const percent = (value: number | null) => (value === null ? "—" : `${(value * 100).toFixed(1)}%`);
const decimal = (value: number | null) => (value === null ? "—" : value.toFixed(3));

const STATUS = {
  passed: { tone: "green", label: "Passed" },
  warned: { tone: "amber", label: "Warned" },
  released: { tone: "slate", label: "Released" },
} as const;

const OUTCOME_TONES = { passed: "text-green-800", warned: "text-amber-800", held: "text-red-800" } as const;

/** A check's value and threshold as its kind reads: a row count, a PSI, or a fraction as a percentage. */
function checkFigure(name: Check["name"], value: number): string {
  if (name === "row_count_zero") return count(value);
  if (name === "distribution_shift") return decimal(value);
  return percent(value);
}

/** A version's quality as a badge: passed green, warned amber, released slate with the operator's reason. */
export function QualityBadge({ quality }: { quality: Quality }) {
  const { tone, label } = STATUS[quality.status];
  return (
    <span className="inline-flex flex-wrap items-center gap-2" data-testid="quality-badge">
      <Badge tone={tone}>{label}</Badge>
      {quality.status === "released" && quality.reason && (
        <span className="text-xs text-slate-700" data-testid="quality-reason">
          Held, then released: {quality.reason}
        </span>
      )}
    </span>
  );
}

/**
 * A version's quality report behind a disclosure: rows against the previous version, added columns,
 * every check (name, column, value, threshold, level, outcome) and each column's null fraction (and
 * the previous one), distinct count and PSI. Tables scroll sideways in their own focusable box, so
 * the page does not at phone width.
 */
export function QualityReport({
  table,
  version,
  quality,
  report,
}: {
  table: string;
  version: number;
  quality: Quality;
  report: Report | null;
}) {
  const checks = report?.checks ?? quality.checks;
  return (
    <details className="text-sm" data-testid="quality-report">
      <summary className="cursor-pointer text-slate-700">Quality report</summary>
      <div className="mt-2 space-y-3">
        {report ? (
          <dl className="grid grid-cols-[auto_minmax(0,1fr)] gap-x-3 gap-y-1">
            <dt className="font-medium text-slate-700">Rows</dt>
            <dd data-testid="quality-rows">{rowsAgainstPrevious(report)}</dd>
            <dt className="font-medium text-slate-700">Changes</dt>
            <dd>
              {count(report.changes.inserted)} inserted, {count(report.changes.updated)} updated,{" "}
              {count(report.changes.deleted)} deleted
            </dd>
            <dt className="font-medium text-slate-700">Added columns</dt>
            <dd className="font-mono text-xs break-all" data-testid="quality-added-columns">
              {report.added_columns.length ? report.added_columns.join(", ") : "none"}
            </dd>
          </dl>
        ) : (
          <p className="text-slate-600">
            No report was kept for this version (it was made before versions were checked).
          </p>
        )}
        {checks.length > 0 && (
          <ScrollingTable label={`Checks of ${table} version ${version}`}>
            <thead>
              <tr>
                {["Check", "Column", "Value", "Threshold", "Level", "Outcome"].map((heading) => (
                  <th key={heading} scope="col" className="pr-3 font-medium text-slate-700">
                    {heading}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {checks.map((check, index) => (
                <tr key={index} data-testid="quality-check">
                  <th scope="row" className="pr-3 font-mono font-normal">
                    {check.name}
                  </th>
                  <td className="pr-3 font-mono">{check.column ?? "—"}</td>
                  <td className="pr-3 tabular-nums">{checkFigure(check.name, check.value)}</td>
                  <td className="pr-3 tabular-nums">{checkFigure(check.name, check.threshold)}</td>
                  <td className="pr-3">{check.level}</td>
                  <td className={`pr-3 font-medium ${OUTCOME_TONES[check.outcome]}`}>{check.outcome}</td>
                </tr>
              ))}
            </tbody>
          </ScrollingTable>
        )}
        {report && report.columns.length > 0 && (
          <ScrollingTable label={`Columns of ${table} version ${version}`}>
            <thead>
              <tr>
                {["Column", "Type", "Null", "Null before", "Distinct", "PSI"].map((heading) => (
                  <th key={heading} scope="col" className="pr-3 font-medium text-slate-700">
                    {heading}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {report.columns.map((column) => (
                <tr key={column.name} data-testid="quality-column">
                  <th scope="row" className="pr-3 font-mono font-normal">
                    {column.name}
                  </th>
                  <td className="pr-3 font-mono">{column.type}</td>
                  <td className="pr-3 tabular-nums">{percent(column.null_fraction)}</td>
                  <td className="pr-3 tabular-nums">{percent(column.previous_null_fraction)}</td>
                  <td className="pr-3 tabular-nums">{count(column.distinct)}</td>
                  <td className="pr-3 tabular-nums">{decimal(column.psi)}</td>
                </tr>
              ))}
            </tbody>
          </ScrollingTable>
        )}
      </div>
    </details>
  );
}

/** "600 (previous 1,000, −40.0%)", or the rows alone for a first version. */
function rowsAgainstPrevious(report: Report): string {
  if (report.previous_rows === null) return `${count(report.rows)} (first version)`;
  if (report.previous_rows === 0) return `${count(report.rows)} (previous 0)`;
  const change = report.rows / report.previous_rows - 1;
  const sign = change > 0 ? "+" : change < 0 ? "−" : "±";
  return `${count(report.rows)} (previous ${count(report.previous_rows)}, ${sign}${Math.abs(change * 100).toFixed(1)}%)`;
}

function ScrollingTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    // Focusable, so the scrolling box can be scrolled with the keyboard.
    <div className="overflow-x-auto rounded border border-slate-200 p-2" tabIndex={0} role="region" aria-label={label}>
      <table className="min-w-full text-left text-xs whitespace-nowrap">
        <caption className="sr-only">{label}</caption>
        {children}
      </table>
    </div>
  );
}
