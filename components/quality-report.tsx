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

const OUTCOME = {
  passed: { label: "Passed", tone: "text-green-800" },
  warned: { label: "Warned", tone: "text-amber-800" },
  held: { label: "Held", tone: "text-red-800" },
} as const;
const LEVEL_LABELS: Record<Check["level"], string> = { hold: "Holds the version", warn: "Warns" };

const points = (value: number) => `${(Math.abs(value) * 100).toFixed(1)} points`;
/** A drop as a fraction: positive is fewer, negative more (a table that grew), 0 none. */
const drop = (value: number, what: string) =>
  value === 0 ? "no change" : `${percent(Math.abs(value))} ${value > 0 ? "fewer" : "more"} ${what}`;

/**
 * Each check in words (docs/tables.md has the checks table): what it measures, the version's
 * figure and the threshold past which it warns or holds, each as its kind reads.
 */
const CHECKS: Record<Check["name"], { label: string; value: (value: number) => string; limit: (t: number) => string }> =
  {
    row_count_zero: {
      label: "Rows in the version",
      value: (value) => `${count(value)} rows`,
      limit: (threshold) => `${count(threshold)} rows or fewer`,
    },
    row_count_drop: {
      label: "Rows lost since the previous version",
      value: (value) => drop(value, "rows"),
      limit: (threshold) => `over ${percent(threshold)} fewer`,
    },
    deleted_fraction: {
      label: "Rows deleted",
      value: (value) => `${percent(value)} of the previous rows`,
      limit: (threshold) => `over ${percent(threshold)}`,
    },
    null_fraction_increase: {
      label: "More empty values (nulls)",
      value: (value) => (value === 0 ? "no change" : `${value > 0 ? "up" : "down"} ${points(value)}`),
      limit: (threshold) => `up over ${points(threshold)}`,
    },
    distinct_drop: {
      label: "Distinct values lost",
      value: (value) => drop(value, "distinct values"),
      limit: (threshold) => `over ${percent(threshold)} fewer`,
    },
    distribution_shift: {
      label: "Shift of the values (PSI)",
      value: (value) => decimal(value),
      limit: (threshold) => `over ${decimal(threshold)}`,
    },
  };

const PSI_MEANING =
  "PSI (population stability index) measures how far a column's values moved from the previous version's: " +
  "under 0.1 little, 0.1 to 0.25 some, over 0.25 a lot.";

/** The checks' columns from md up (header row and each check's values); below md each check is a card. */
const CHECK_COLUMNS = "md:grid-cols-[minmax(0,2fr)_minmax(0,1fr)_minmax(0,1.5fr)_minmax(0,1.5fr)_minmax(0,1.2fr)_5rem]";
/** A value's label: beside it in a card, for screen readers only where the header row names the column. */
const CHECK_LABEL = "font-medium text-slate-700 md:sr-only";

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
        {checks.length > 0 && <CheckList label={`Checks of ${table} version ${version}`} checks={checks} />}
        {report && report.columns.length > 0 && (
          <ScrollingTable label={`Columns of ${table} version ${version}`}>
            <thead className="border-b border-slate-200 bg-slate-50">
              <tr>
                {["Column", "Type", "Nulls", "Nulls before", "Distinct", "PSI"].map((heading) => (
                  <th key={heading} scope="col" className={`${CELL} font-medium text-slate-700`}>
                    {heading}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100">
              {report.columns.map((column) => (
                <tr key={column.name} data-testid="quality-column">
                  <th scope="row" className={`${CELL} font-mono font-normal`}>
                    {column.name}
                  </th>
                  <td className={`${CELL} font-mono`}>{column.type}</td>
                  <td className={`${CELL} text-right tabular-nums`}>{percent(column.null_fraction)}</td>
                  <td className={`${CELL} text-right tabular-nums`}>{percent(column.previous_null_fraction)}</td>
                  <td className={`${CELL} text-right tabular-nums`}>{count(column.distinct)}</td>
                  <td className={`${CELL} text-right tabular-nums`}>{decimal(column.psi)}</td>
                </tr>
              ))}
            </tbody>
          </ScrollingTable>
        )}
        {(checks.some((check) => check.name === "distribution_shift") || (report?.columns.length ?? 0) > 0) && (
          <p className="text-xs text-slate-600" data-testid="quality-psi-meaning">
            {PSI_MEANING}
          </p>
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

const CELL = "px-3 py-1.5";

/** Every check: a card each below md (label beside value), lined up under one header row from md. */
function CheckList({ label, checks }: { label: string; checks: Check[] }) {
  return (
    <div className="rounded-md border border-slate-200 text-xs">
      <div
        aria-hidden
        className={`hidden gap-x-3 border-b border-slate-200 bg-slate-50 px-3 py-1.5 font-medium text-slate-700 md:grid ${CHECK_COLUMNS}`}
      >
        <span>Check</span>
        <span>Column</span>
        <span>This version</span>
        <span>Threshold</span>
        <span>Level</span>
        <span>Outcome</span>
      </div>
      <ol aria-label={label} className="divide-y divide-slate-100">
        {checks.map((check, index) => {
          const about = CHECKS[check.name];
          return (
            <li key={index} className="px-3 py-2 md:py-1.5" data-testid="quality-check" data-check={check.name}>
              <dl
                className={`grid grid-cols-[6.5rem_minmax(0,1fr)] gap-x-3 gap-y-0.5 md:items-baseline ${CHECK_COLUMNS}`}
              >
                <dt className={CHECK_LABEL}>Check</dt>
                <dd className="font-medium text-slate-900" data-testid="quality-check-name">
                  {about.label}
                </dd>
                <dt className={CHECK_LABEL}>Column</dt>
                <dd className="font-mono break-all">{check.column ?? "whole table"}</dd>
                <dt className={CHECK_LABEL}>This version</dt>
                <dd className="tabular-nums">{about.value(check.value)}</dd>
                <dt className={CHECK_LABEL}>Threshold</dt>
                <dd className="tabular-nums">{about.limit(check.threshold)}</dd>
                <dt className={CHECK_LABEL}>Level</dt>
                <dd>{LEVEL_LABELS[check.level]}</dd>
                <dt className={CHECK_LABEL}>Outcome</dt>
                <dd className={`font-medium ${OUTCOME[check.outcome].tone}`}>{OUTCOME[check.outcome].label}</dd>
              </dl>
            </li>
          );
        })}
      </ol>
    </div>
  );
}

function ScrollingTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    // Focusable, so the scrolling box can be scrolled with the keyboard.
    <div className="overflow-x-auto rounded-md border border-slate-200" tabIndex={0} role="region" aria-label={label}>
      <table className="min-w-full text-left text-xs whitespace-nowrap">
        <caption className="sr-only">{label}</caption>
        {children}
      </table>
    </div>
  );
}
