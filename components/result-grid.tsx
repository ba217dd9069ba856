import type { Json } from "@/lib/engine/preview-values";
import { isNumeric, PreviewFrame, ValueCell } from "./preview-frame";
import { PreviewValue } from "./preview-value";

/** Rows of values in a PreviewFrame: the Query page's result, a table's or a file's preview. */
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
  const numeric = columns.map(isNumeric);
  return (
    <PreviewFrame columns={columns} summary={summary} caption={caption} testIdPrefix={testIdPrefix}>
      {rows.map((row, rowIndex) => (
        <tr key={rowIndex}>
          {row.map((value, columnIndex) => (
            <ValueCell key={columnIndex} numeric={numeric[columnIndex] ?? false}>
              <PreviewValue value={value} />
            </ValueCell>
          ))}
        </tr>
      ))}
    </PreviewFrame>
  );
}
