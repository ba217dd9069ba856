import type { Preview } from "@/lib/datasets/access";
import type { Change, ChangedPreview, ChangeValue } from "@/lib/tables/change-preview";
import { isNumeric, PreviewFrame, ValueCell } from "./preview-frame";
import { PreviewValue } from "./preview-value";

const KIND_LABELS: Record<Change["kind"], { label: string; tone: string }> = {
  insert: { label: "inserted", tone: "text-green-800" },
  delete: { label: "deleted", tone: "text-red-800" },
  update: { label: "updated", tone: "text-amber-800" },
  update_preimage: { label: "updated, before", tone: "text-amber-800" },
  update_postimage: { label: "updated, after", tone: "text-amber-800" },
};

/**
 * A change file's first rows as changes (lib/tables/change-preview.ts): one row per change, its
 * kind first, an update's changed values as old -> new, in a PreviewFrame as a file's preview.
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
  const { columns, changes, fileRows } = changed;
  const numeric = columns.map(isNumeric);
  const rows = (count: number) => `${count.toLocaleString("en-US")} ${count === 1 ? "row" : "rows"}`;
  const summary =
    (fileRows === preview.total_rows
      ? `All ${rows(fileRows)} of the change file`
      : `The first ${rows(fileRows)} of ${preview.total_rows.toLocaleString("en-US")} in the change file`) +
    `, as ${changes.length.toLocaleString("en-US")} ${changes.length === 1 ? "change" : "changes"}.`;
  return (
    <PreviewFrame columns={columns} summary={summary} caption={fileName} testIdPrefix="preview" firstHeader="Change">
      {changes.map((change, rowIndex) => (
        <tr key={rowIndex} data-testid="change-row">
          <td className={`px-3 py-1.5 font-medium whitespace-nowrap ${KIND_LABELS[change.kind].tone}`}>
            {KIND_LABELS[change.kind].label}
          </td>
          {change.values.map((value, columnIndex) => (
            <ValueCell key={columnIndex} numeric={numeric[columnIndex] ?? false}>
              <ChangedValue value={value} />
            </ValueCell>
          ))}
        </tr>
      ))}
    </PreviewFrame>
  );
}

/**
 * A value, or an updated one as old -> new (read out as "was ..., now ..."): struck-through grey,
 * then bold. No red and green: an update is neither bad nor good (`true -> false` is just a change).
 */
function ChangedValue({ value }: { value: ChangeValue }) {
  if ("value" in value) return <PreviewValue value={value.value} />;
  return (
    <span className="inline-flex items-center gap-1 whitespace-nowrap">
      <del className="text-slate-600">
        <span className="sr-only">was </span>
        <PreviewValue value={value.old} inline />
      </del>
      <span aria-hidden>→</span>
      <ins className="font-semibold text-slate-900 no-underline">
        <span className="sr-only">, now </span>
        <PreviewValue value={value.new} inline />
      </ins>
    </span>
  );
}
