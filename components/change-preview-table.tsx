import { useId } from "react";
import type { Preview } from "@/lib/datasets/access";
import type { Change, ChangedPreview, ChangeValue } from "@/lib/tables/change-preview";
import { NUMERIC_TYPE, PreviewValue } from "./preview-value";

const KIND_LABELS: Record<Change["kind"], { label: string; tone: string }> = {
  insert: { label: "inserted", tone: "text-green-800" },
  delete: { label: "deleted", tone: "text-red-800" },
  update: { label: "updated", tone: "text-amber-800" },
  update_preimage: { label: "updated, before", tone: "text-amber-800" },
  update_postimage: { label: "updated, after", tone: "text-amber-800" },
};

/**
 * A change file's first rows as changes (lib/tables/change-preview.ts): one row per change, its
 * kind first, an update's changed values as old -> new. In a box that scrolls both ways, as a
 * file's preview.
 */
export function ChangePreviewTable({
  changed,
  preview,
  fileName,
}: {
  changed: ChangedPreview;
  preview: Preview;
  fileName: string;
}) {
  const summaryId = useId();
  const { columns, changes, fileRows } = changed;
  const numeric = columns.map((column) => NUMERIC_TYPE.test(column.type));
  const rows = (count: number) => `${count.toLocaleString("en-US")} ${count === 1 ? "row" : "rows"}`;
  const summary =
    (fileRows === preview.total_rows
      ? `All ${rows(fileRows)} of the change file`
      : `The first ${rows(fileRows)} of ${preview.total_rows.toLocaleString("en-US")} in the change file`) +
    `, as ${changes.length.toLocaleString("en-US")} ${changes.length === 1 ? "change" : "changes"}.`;
  return (
    <div className="space-y-2">
      <p id={summaryId} className="text-sm text-slate-600" data-testid="preview-summary">
        {summary}
      </p>
      <div
        role="region"
        aria-labelledby={summaryId}
        tabIndex={0}
        className="max-h-[60vh] overflow-auto rounded-md border border-slate-200 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600"
      >
        <table className="min-w-full text-left text-sm" data-testid="preview-table">
          <caption className="sr-only">
            {fileName}: {summary}
          </caption>
          <thead>
            <tr>
              <th scope="col" className="sticky top-0 border-b border-slate-200 bg-slate-50 px-3 py-2 align-bottom">
                <span className="block font-semibold">Change</span>
              </th>
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
            {changes.map((change, rowIndex) => (
              <tr key={rowIndex} data-testid="change-row">
                <td className={`px-3 py-1.5 font-medium whitespace-nowrap ${KIND_LABELS[change.kind].tone}`}>
                  {KIND_LABELS[change.kind].label}
                </td>
                {change.values.map((value, columnIndex) => (
                  <td
                    key={columnIndex}
                    className={`px-3 py-1.5 ${numeric[columnIndex] ? "text-right tabular-nums" : ""}`}
                  >
                    <ChangedValue value={value} />
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

/** A value, or an updated one as old -> new (read out as "was ..., now ..."). */
function ChangedValue({ value }: { value: ChangeValue }) {
  if ("value" in value) return <PreviewValue value={value.value} />;
  return (
    <span className="inline-flex items-center gap-1 whitespace-nowrap">
      <del className="text-red-800">
        <span className="sr-only">was </span>
        <PreviewValue value={value.old} inline />
      </del>
      <span aria-hidden>→</span>
      <ins className="font-semibold text-green-800 no-underline">
        <span className="sr-only">, now </span>
        <PreviewValue value={value.new} inline />
      </ins>
    </span>
  );
}
