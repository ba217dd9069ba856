import { useId, type ReactNode } from "react";
import { NUMERIC_TYPE } from "./preview-value";

/**
 * Rows as a real table in a box of its own that scrolls both ways (focusable, so the keyboard
 * scrolls it too), the column names and types kept in view: a wide table never widens the page.
 * `summary` says what is shown (and labels the box for screen readers); the rows are `children`,
 * their values in ValueCells. The Query page's result, a table's and a change file's preview.
 */
export function PreviewFrame({
  columns,
  summary,
  caption,
  testIdPrefix,
  firstHeader,
  children,
}: {
  columns: { name: string; type: string }[];
  summary: string;
  caption: string;
  /** Names the table and its summary for tests: `<prefix>-table`, `<prefix>-summary`. */
  testIdPrefix: string;
  /** A column of the frame's own before the data's (a change's kind). */
  firstHeader?: string;
  children: ReactNode;
}) {
  const summaryId = useId();
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
              {firstHeader !== undefined && (
                <th scope="col" className={HEADER_CELL}>
                  <span className="block font-semibold">{firstHeader}</span>
                </th>
              )}
              {columns.map((column, index) => (
                <th
                  key={index}
                  scope="col"
                  className={`${HEADER_CELL} whitespace-nowrap ${isNumeric(column) ? "text-right" : ""}`}
                >
                  <span className="block font-mono font-semibold">{column.name}</span>{" "}
                  <span className="block font-mono text-xs font-normal text-slate-600">{column.type}</span>
                </th>
              ))}
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">{children}</tbody>
        </table>
      </div>
    </div>
  );
}

const HEADER_CELL = "sticky top-0 border-b border-slate-200 bg-slate-50 px-3 py-2 align-bottom";

/** Whether a column holds numbers (right-aligned, in even figures). */
export const isNumeric = (column: { type: string }) => NUMERIC_TYPE.test(column.type);

/** A value's cell in a PreviewFrame's row. */
export function ValueCell({ numeric, children }: { numeric: boolean; children: ReactNode }) {
  return <td className={`px-3 py-1.5 ${numeric ? "text-right tabular-nums" : ""}`}>{children}</td>;
}
