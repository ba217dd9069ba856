"use client";

import { useState } from "react";
import type { Preview } from "@/lib/datasets/access";
import type { PreviewResult } from "@/lib/http/browser-download";
import type { RowsResult, TableFilter } from "@/lib/http/browser-explore";
import { changesOf } from "@/lib/tables/change-preview";
import { ChangePreviewTable } from "./change-preview-table";
import { Dialog } from "./dialog";
import { ResultGrid } from "./result-grid";
import { TableFilterBar } from "./table-filter";
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
  filter,
}: {
  fileName: string;
  load: () => Promise<PreviewResult>;
  /** A change file: each update shown as one row, old -> new. */
  changes?: boolean;
  /** A table's rows through a filter bar (columns, where), read on the server: a table's preview has one. */
  filter?: (filter: TableFilter) => Promise<RowsResult>;
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
          ) : filter ? (
            <TableFilterBar
              tableName={fileName}
              columns={result.preview.columns}
              firstRow={result.preview.rows[0]}
              run={filter}
            >
              <PreviewTable preview={result.preview} fileName={fileName} />
            </TableFilterBar>
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

/** The preview's rows: all of them, or the first of how many. */
function PreviewTable({ preview, fileName }: { preview: Preview; fileName: string }) {
  const shown = preview.rows.length;
  const summary =
    shown === preview.total_rows
      ? `All ${shown.toLocaleString("en-US")} ${shown === 1 ? "row" : "rows"}.`
      : `The first ${shown.toLocaleString("en-US")} of ${preview.total_rows.toLocaleString("en-US")} rows.`;
  return (
    <ResultGrid
      columns={preview.columns}
      rows={preview.rows}
      summary={summary}
      caption={fileName}
      testIdPrefix="preview"
    />
  );
}
