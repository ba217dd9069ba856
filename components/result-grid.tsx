import { useId } from "react";
import type { Json } from "@/lib/engine/preview-values";
import { NUMERIC_TYPE, PreviewValue } from "./preview-value";

/**
 * Rows as a real table in a box of its own that scrolls both ways (focusable, so the keyboard
 * scrolls it too), the column names and types kept in view: a wide result never widens the page.
 * `summary` says what is shown (and labels the box for screen readers).
 */
export function ResultGrid({
  columns,
  rows,
  summary,
  caption,
  testIdPrefix = "result",
}: {
  columns: { name: string; type: string }[];
  rows: Json[][];
  summary: string;
  caption: string;
  /** Names the table and its summary for tests: `<prefix>-table`, `<prefix>-summary`. */
  testIdPrefix?: string;
}) {
  const summaryId = useId();
  const numeric = columns.map((column) => NUMERIC_TYPE.test(column.type));
  return (
    <div className="space-y-2">
      <p id={summaryId} className="text-sm text-slate-600" data-testid={`${testIdPrefix}-summary`}>
        {summary}
      </p>
      <div
        role="region"
        aria-labelledby={summaryId}
        tabIndex={0}
        className="max-h-[60vh] overflow-auto rounded-md border border-slate-200 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600"
      >
        <table className="min-w-full text-left text-sm" data-testid={`${testIdPrefix}-table`}>
          <caption className="sr-only">
            {caption}: {summary}
          </caption>
          <thead>
            <tr>
              {columns.map((column, index) => (
                <th
                  key={index}
                  scope="col"
                  className={`sticky top-0 border-b border-slate-200 bg-slate-50 px-3 py-2 align-bottom whitespace-nowrap ${numeric[index] ? "text-right" : ""}`}
                >
                  <span className="block font-mono font-semibold">{column.name}</span>{" "}
                  <span className="block font-mono text-xs font-normal text-slate-600">{column.type}</span>
                </th>
              ))}
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">
            {rows.map((row, rowIndex) => (
              <tr key={rowIndex}>
                {row.map((value, columnIndex) => (
                  <td
                    key={columnIndex}
                    className={`px-3 py-1.5 ${numeric[columnIndex] ? "text-right tabular-nums" : ""}`}
                  >
                    <PreviewValue value={value} />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
