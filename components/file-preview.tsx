"use client";

import { useId, useState } from "react";
import type { Preview } from "@/lib/datasets/access";
import type { PreviewResult } from "@/lib/http/browser-download";
import { changesOf } from "@/lib/tables/change-preview";
import { ChangePreviewTable } from "./change-preview-table";
import { Dialog } from "./dialog";
import { NUMERIC_TYPE, PreviewValue } from "./preview-value";
import { Button, Notice } from "./ui";

/**
 * A file's "Preview" button and the dialog it opens: the file's first rows as a table. The rows
 * are fetched when it is first opened (`load`: a server action bound to the file), not with the
 * page, which may list hundreds of files.
 */
export function FilePreview({
  fileName,
  load,
  changes = false,
}: {
  fileName: string;
  load: () => Promise<PreviewResult>;
  /** A change file: each update shown as one row, old -> new. */
  changes?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [result, setResult] = useState<PreviewResult>();
  async function show() {
    setOpen(true);
    if (result?.ok) return;
    setResult(undefined);
    setResult(
      await load().catch((): PreviewResult => ({ ok: false, error: "The preview could not be loaded. Try again." })),
    );
  }
  return (
    <>
      <Button tone="secondary" size="sm" onClick={show}>
        Preview<span className="sr-only"> {fileName}</span>
      </Button>
      <Dialog open={open} title={`Preview of ${fileName}`} onClose={() => setOpen(false)} wide>
        {!result ? (
          <p role="status" className="text-sm text-slate-600">
            Loading the first rows…
          </p>
        ) : result.ok ? (
          changes && changesOf(result.preview) ? (
            <ChangePreviewTable changed={changesOf(result.preview)!} preview={result.preview} fileName={fileName} />
          ) : (
            <PreviewTable preview={result.preview} fileName={fileName} />
          )
        ) : (
          <Notice tone="error">{result.error}</Notice>
        )}
        <div className="flex justify-end">
          <Button tone="secondary" onClick={() => setOpen(false)}>
            Close
          </Button>
        </div>
      </Dialog>
    </>
  );
}

/**
 * The rows in a box of their own that scrolls both ways (focusable, so the keyboard scrolls it
 * too), with the column names and types kept in view: a wide file never widens the page.
 */
function PreviewTable({ preview, fileName }: { preview: Preview; fileName: string }) {
  const summaryId = useId();
  const numeric = preview.columns.map((column) => NUMERIC_TYPE.test(column.type));
  const shown = preview.rows.length;
  const summary =
    shown === preview.total_rows
      ? `All ${shown.toLocaleString("en-US")} ${shown === 1 ? "row" : "rows"}.`
      : `The first ${shown.toLocaleString("en-US")} of ${preview.total_rows.toLocaleString("en-US")} rows.`;
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
              {preview.columns.map((column, index) => (
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
            {preview.rows.map((row, rowIndex) => (
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
