"use client";

import Link from "next/link";
import { useId, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { ResultGrid } from "@/components/result-grid";
import { Button, Notice, inputClass, linkClass } from "@/components/ui";
import type { QueryHistoryEntry } from "@/lib/explore/history";
import { SQL_MAX_LENGTH, SQL_PAGE_LIMIT } from "@/lib/schemas/explore-limits";
import { formatDate } from "@/lib/format";
import { runQueryAction, type RunQueryResult } from "./actions";

/** A table of the sidebar: its columns with their types and, where the data dictionary has them, what they hold. */
export type TableColumns = {
  name: string;
  description: string | null;
  columns: { name: string; type: string; description: string | null; unit: string | null }[];
};

const LIMITS = [10, 100, SQL_PAGE_LIMIT];
const count = (value: number) => value.toLocaleString("en-US");

/**
 * The Query page's working part: the editor (Ctrl/Cmd+Enter runs it), the order's tables and
 * columns beside it, the result as a grid with its downloads, and the buyer's last queries (those
 * of this order open here; another order's open on its own page).
 */
export function QueryConsole({
  orderId,
  tables,
  initialSql,
  history: initialHistory,
}: {
  orderId: string;
  tables: TableColumns[];
  initialSql: string;
  history: QueryHistoryEntry[];
}) {
  const id = useId();
  const editor = useRef<HTMLTextAreaElement>(null);
  const [sql, setSql] = useState(initialSql);
  const [limit, setLimit] = useState(100);
  const [running, setRunning] = useState(false);
  const [answer, setAnswer] = useState<{ result: RunQueryResult; sql: string }>();
  const [history, setHistory] = useState(initialHistory);

  async function run(event?: FormEvent) {
    event?.preventDefault();
    if (running) return;
    setRunning(true);
    const ran = sql;
    const result = await runQueryAction(orderId, ran, limit).catch((): RunQueryResult => ({
      ok: false,
      error: "The query could not be run. Try again.",
    }));
    setRunning(false);
    setAnswer({ result, sql: ran });
    if (result.history) setHistory(result.history);
  }

  function runOnShortcut(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) void run(event);
  }

  function reuse(text: string) {
    setSql(text);
    editor.current?.focus();
  }

  const error = answer && !answer.result.ok ? answer.result.error : undefined;
  return (
    <div className="space-y-8">
      <div className="grid gap-6 lg:grid-cols-[minmax(0,1fr)_18rem]">
        <div className="min-w-0 space-y-4">
          <form onSubmit={run} className="space-y-3" aria-label="Query">
            <div className="space-y-1">
              <label htmlFor={`${id}-sql`} className="block text-sm font-medium">
                SQL
              </label>
              <textarea
                id={`${id}-sql`}
                ref={editor}
                value={sql}
                onChange={(event) => setSql(event.target.value)}
                onKeyDown={runOnShortcut}
                rows={8}
                maxLength={SQL_MAX_LENGTH}
                spellCheck={false}
                autoCapitalize="off"
                autoCorrect="off"
                aria-invalid={error ? true : undefined}
                aria-describedby={`${error ? `${id}-error ` : ""}${id}-hint`}
                className={`${inputClass} font-mono ${error ? "border-red-600" : ""}`}
                data-testid="query-editor"
              />
              <p id={`${id}-hint`} className="text-xs text-slate-600">
                Ctrl+Enter (⌘+Enter on a Mac) runs it. {count(sql.length)}/{count(SQL_MAX_LENGTH)} characters.
              </p>
            </div>
            <div className="flex flex-wrap items-end gap-3">
              <div className="space-y-1">
                <label htmlFor={`${id}-limit`} className="block text-sm font-medium">
                  Rows to show
                </label>
                <select
                  id={`${id}-limit`}
                  value={limit}
                  onChange={(event) => setLimit(Number(event.target.value))}
                  className={inputClass}
                >
                  {LIMITS.map((value) => (
                    <option key={value} value={value}>
                      {count(value)}
                    </option>
                  ))}
                </select>
              </div>
              <Button type="submit" disabled={running || !sql.trim()}>
                {running ? "Running…" : "Run query"}
              </Button>
            </div>
          </form>
          <p role="status" className="sr-only">
            {running
              ? "Running the query."
              : answer?.result.ok
                ? `${count(answer.result.result.rows.length)} rows.`
                : ""}
          </p>
          {error && (
            <div id={`${id}-error`}>
              <Notice tone="error">
                <span data-testid="query-error">{error}</span>
              </Notice>
            </div>
          )}
          {answer?.result.ok && <QueryResultView orderId={orderId} sql={answer.sql} result={answer.result.result} />}
        </div>
        <TablesAside tables={tables} />
      </div>
      <QueryHistory orderId={orderId} history={history} reuse={reuse} />
    </div>
  );
}

function QueryResultView({
  orderId,
  sql,
  result,
}: {
  orderId: string;
  sql: string;
  result: Extract<RunQueryResult, { ok: true }>["result"];
}) {
  const shown = result.rows.length;
  const summary = `${count(shown)} ${shown === 1 ? "row" : "rows"}${result.truncated ? ", more exist: raise the rows to show, or narrow the query" : ""}.`;
  return (
    <section aria-label="Result" className="space-y-3">
      <ResultGrid columns={result.columns} rows={result.rows} summary={summary} caption="Query result" />
      {/* A form POST: the query may be longer than a URL should be. */}
      <form method="post" action={`/orders/${orderId}/query/result`} className="flex flex-wrap items-center gap-2">
        <input type="hidden" name="sql" value={sql} />
        <span className="text-sm text-slate-700">Download the result (up to {count(SQL_PAGE_LIMIT)} rows):</span>
        <Button type="submit" tone="secondary" size="sm" name="format" value="csv">
          CSV
        </Button>
        <Button type="submit" tone="secondary" size="sm" name="format" value="json">
          JSON
        </Button>
        <Button type="submit" tone="secondary" size="sm" name="format" value="parquet">
          Parquet
        </Button>
      </form>
    </section>
  );
}

function TablesAside({ tables }: { tables: TableColumns[] }) {
  return (
    <aside aria-labelledby="query-tables-heading" className="space-y-2 lg:max-h-[70vh] lg:overflow-auto">
      <h2 id="query-tables-heading" className="text-sm font-semibold text-slate-700">
        Tables and columns
      </h2>
      <ul className="space-y-2" data-testid="query-tables">
        {tables.map((table) => (
          <li key={table.name}>
            <details open={tables.length <= 3} className="rounded-md border border-slate-200 bg-white">
              <summary className="cursor-pointer px-3 py-1.5 font-mono text-sm font-medium break-all">
                {table.name}
              </summary>
              {table.description && (
                <p
                  className="px-3 pb-1.5 text-xs break-words whitespace-pre-line text-slate-700"
                  data-testid="query-table-description"
                >
                  {table.description}
                </p>
              )}
              <ul className="space-y-1 px-3 pb-2 text-xs" aria-label={`Columns of ${table.name}`}>
                {table.columns.map((column) => (
                  <li key={column.name} title={columnTitle(column)}>
                    <span className="flex justify-between gap-2 font-mono">
                      <span className="break-all">{column.name}</span>
                      <span className="shrink-0 text-slate-600">{column.type}</span>
                    </span>
                    {(column.description || column.unit) && (
                      <span className="block break-words text-slate-600" data-testid="query-column-description">
                        {column.description}
                        {column.unit && (
                          <>
                            {column.description ? " " : ""}Unit: {column.unit}
                          </>
                        )}
                      </span>
                    )}
                  </li>
                ))}
              </ul>
            </details>
          </li>
        ))}
      </ul>
    </aside>
  );
}

function QueryHistory({
  orderId,
  history,
  reuse,
}: {
  orderId: string;
  history: QueryHistoryEntry[];
  reuse: (sql: string) => void;
}) {
  return (
    <section aria-labelledby="query-history-heading" className="space-y-2">
      <h2 id="query-history-heading" className="text-lg font-semibold">
        Your last queries
      </h2>
      {history.length === 0 ? (
        <p className="text-sm text-slate-600">The queries you run appear here, the last 20 of all your orders.</p>
      ) : (
        <ol
          className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white"
          data-testid="query-history"
        >
          {history.map((entry) => (
            <li key={entry.id} className="space-y-1 p-3 text-sm" data-testid="query-history-entry">
              <div className="flex flex-wrap items-center gap-x-3 gap-y-1 text-slate-600">
                <span>{formatDate(entry.ranAt)}</span>
                <span className="break-all">{entry.orderName}</span>
                <span className={entry.error ? "text-red-800" : ""}>
                  {entry.error ? "refused" : `${count(entry.rows ?? 0)} ${entry.rows === 1 ? "row" : "rows"}`}
                </span>
                {entry.orderId === orderId ? (
                  <Button tone="secondary" size="sm" onClick={() => reuse(entry.sql)}>
                    Edit again
                  </Button>
                ) : (
                  <Link href={`/orders/${entry.orderId}/query?from=${entry.id}`} className={linkClass}>
                    Open on its order
                  </Link>
                )}
              </div>
              <pre className="max-h-24 overflow-auto font-mono text-xs whitespace-pre-wrap text-slate-800">
                {entry.sql}
              </pre>
              {entry.error && <p className="text-xs text-red-800">{entry.error}</p>}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The column's hover text: its dictionary entry in one line (the same words are shown below its name). */
function columnTitle(column: TableColumns["columns"][number]): string | undefined {
  if (!column.description && !column.unit) return undefined;
  return [column.description, column.unit && `Unit: ${column.unit}`].filter(Boolean).join(" · ");
}
