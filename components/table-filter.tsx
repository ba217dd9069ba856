"use client";

import { useId, useState, type FormEvent, type ReactNode } from "react";
import type { Json } from "@/lib/engine/preview-values";
import { whereExample } from "@/lib/dashboard/where-example";
import type { RowsPage, RowsResult, TableFilter } from "@/lib/http/browser-explore";
import { ResultGrid } from "./result-grid";
import { Button, Notice, inputClass } from "./ui";

/**
 * The codes whose detail says what in the where text to fix, shown under it (the columns come from
 * the checkboxes, so an unknown column is one the where names).
 */
const WHERE_CODES = new Set(["invalid_filter", "unknown_column"]);
/** The bar's own refusal: no column chosen. */
const NO_COLUMNS = "no_columns";

const count = (value: number) => value.toLocaleString("en-US");

/**
 * A table preview's filter bar: which columns to show and a `where` over them, run on the server
 * (readTableRows: the whole current version, not just the preview's rows). Until a filter is
 * applied, or after it is cleared, `children` (the plain preview) shows. A refusal is shown as
 * the server words it, beside the field it is about: invalid_filter names the offending token,
 * unknown_column the name. Rows are only ever those of the last answer: after a refusal none show,
 * so no earlier filter's rows stand under an error as if they matched.
 */
export function TableFilterBar({
  tableName,
  columns,
  firstRow,
  run,
  children,
}: {
  tableName: string;
  columns: { name: string; type: string }[];
  /** The preview's first row: the where field's example uses its values. */
  firstRow?: Json[];
  run: (filter: TableFilter) => Promise<RowsResult>;
  children: ReactNode;
}) {
  const id = useId();
  const [chosen, setChosen] = useState<string[]>(columns.map((column) => column.name));
  const [where, setWhere] = useState("");
  const [busy, setBusy] = useState(false);
  const [refusal, setRefusal] = useState<{ error: string; code?: string }>();
  const [shown, setShown] = useState<{ page: RowsPage; offset: number; filter: TableFilter }>();

  async function load(filter: TableFilter, offset: number) {
    setBusy(true);
    const result = await run({ ...filter, offset }).catch((): RowsResult => ({
      ok: false,
      error: "The rows could not be loaded. Try again.",
    }));
    setBusy(false);
    if (result.ok) {
      setRefusal(undefined);
      setShown({ page: result.page, offset, filter });
    } else {
      setRefusal(result);
      setShown(undefined);
    }
  }

  function apply(event: FormEvent) {
    event.preventDefault();
    if (chosen.length === 0) {
      setRefusal({ error: "Choose at least one column to show.", code: NO_COLUMNS });
      return;
    }
    // All columns chosen: ask for none, so columns added later are not left out.
    const all = chosen.length === columns.length;
    void load({ columns: all ? undefined : columns.map((c) => c.name).filter((n) => chosen.includes(n)), where }, 0);
  }

  function clear() {
    setChosen(columns.map((column) => column.name));
    setWhere("");
    setRefusal(undefined);
    setShown(undefined);
  }

  const whereError = refusal && WHERE_CODES.has(refusal.code ?? "") ? refusal.error : undefined;
  const columnsError = refusal?.code === NO_COLUMNS ? refusal.error : undefined;
  const otherError = refusal && !whereError && !columnsError ? refusal.error : undefined;
  return (
    <div className="space-y-3">
      <form
        onSubmit={apply}
        className="space-y-3 rounded-md border border-slate-200 p-3"
        aria-label={`Filter ${tableName}`}
      >
        <details className="text-sm">
          <summary className="cursor-pointer font-medium text-slate-700">
            Columns to show ({chosen.length} of {columns.length})
          </summary>
          <fieldset className="mt-2" aria-describedby={columnsError ? `${id}-columns-error` : undefined}>
            <legend className="sr-only">Columns to show</legend>
            <div className="flex flex-wrap gap-x-4 gap-y-1">
              {columns.map((column) => (
                <label key={column.name} className="inline-flex items-center gap-1.5 font-mono text-xs">
                  <input
                    type="checkbox"
                    checked={chosen.includes(column.name)}
                    onChange={(event) =>
                      setChosen((now) =>
                        event.target.checked ? [...now, column.name] : now.filter((name) => name !== column.name),
                      )
                    }
                  />
                  {column.name}
                </label>
              ))}
            </div>
          </fieldset>
        </details>
        {columnsError && (
          <p
            id={`${id}-columns-error`}
            className="text-sm font-medium text-red-800"
            role="alert"
            data-testid="filter-columns-error"
          >
            {columnsError}
          </p>
        )}
        <div className="space-y-1">
          <label htmlFor={`${id}-where`} className="block text-sm font-medium">
            Where
          </label>
          <input
            id={`${id}-where`}
            value={where}
            onChange={(event) => setWhere(event.target.value)}
            placeholder={whereExample(columns, firstRow)}
            spellCheck={false}
            aria-invalid={whereError ? true : undefined}
            aria-describedby={`${whereError ? `${id}-where-error ` : ""}${id}-where-hint`}
            className={`${inputClass} font-mono ${whereError ? "border-red-600" : ""}`}
            data-testid="filter-where"
          />
          {whereError && (
            <p
              id={`${id}-where-error`}
              className="text-sm font-medium text-red-800"
              role="alert"
              data-testid="filter-where-error"
            >
              {whereError}
            </p>
          )}
          <p id={`${id}-where-hint`} className="text-xs text-slate-600">
            One condition over the columns: = &lt;&gt; &lt; &gt; AND OR NOT, IN, BETWEEN, LIKE, IS NULL, and a few
            functions (lower, upper, length, trim, abs, round, coalesce, date_trunc, year, month, day, contains,
            starts_with). Blank: every row.
          </p>
        </div>
        <div className="flex flex-wrap gap-2">
          <Button type="submit" size="sm" disabled={busy}>
            {busy ? "Filtering…" : "Apply filter"}
          </Button>
          {(shown || refusal || where) && (
            <Button tone="secondary" size="sm" onClick={clear}>
              Clear filter
            </Button>
          )}
        </div>
      </form>
      {otherError && <Notice tone="error">{otherError}</Notice>}
      {refusal ? (
        <p className="text-sm text-slate-600" data-testid="filtered-none">
          No rows shown: fix the filter above, or clear it to see the preview again.
        </p>
      ) : shown ? (
        <FilteredRows
          tableName={tableName}
          shown={shown}
          busy={busy}
          next={() => shown.page.next_offset !== null && void load(shown.filter, shown.page.next_offset)}
          first={() => void load(shown.filter, 0)}
        />
      ) : (
        children
      )}
    </div>
  );
}

function FilteredRows({
  tableName,
  shown,
  busy,
  next,
  first,
}: {
  tableName: string;
  shown: { page: RowsPage; offset: number };
  busy: boolean;
  next: () => void;
  first: () => void;
}) {
  const { page, offset } = shown;
  const summary =
    page.rows.length === 0
      ? offset === 0
        ? "No row matches this filter."
        : "No more rows match."
      : `Matching rows ${count(offset + 1)} to ${count(offset + page.rows.length)}${page.next_offset === null ? " (the last)" : ", more follow"}, version ${page.version}.`;
  return (
    <div className="space-y-2">
      <ResultGrid
        columns={page.columns}
        rows={page.rows}
        summary={summary}
        caption={`${tableName}, filtered`}
        testIdPrefix="filtered"
      />
      <div className="flex flex-wrap gap-2">
        {offset > 0 && (
          <Button tone="secondary" size="sm" onClick={first} disabled={busy}>
            First rows
          </Button>
        )}
        {page.next_offset !== null && (
          <Button tone="secondary" size="sm" onClick={next} disabled={busy}>
            Next rows
          </Button>
        )}
      </div>
    </div>
  );
}
