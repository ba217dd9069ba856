import type { z } from "zod";
import { freshnessWords } from "@/lib/dashboard/freshness-words";
import type { tableColumnSchema, tableSchema } from "@/lib/schemas/api";
import { linkClass } from "./ui";

/**
 * What a table promises (contract Part 9) as its section on the order page shows it: its
 * description, its freshness (the cadence and whether the next version is late) and its data
 * dictionary, all from the API's Table; and, on the dashboard, its data contract to download.
 */

export type TablePromises = Pick<z.infer<typeof tableSchema>, "description" | "columns" | "freshness">;
type TableColumn = z.infer<typeof tableColumnSchema>;

/** The table's description, its paragraphs kept; nothing when it has none. */
export function TableDescription({ description }: { description: string | null }) {
  if (!description) return null;
  return (
    <p className="text-sm break-words whitespace-pre-line text-slate-700" data-testid="table-description">
      {description}
    </p>
  );
}

/**
 * One line on the table's refresh: its cadence and when the next version is due, or, once that
 * has passed, "Late:" in words (and a warning's colour) with when it was due; a table with no
 * cadence says none is promised, so a buyer does not wait on one.
 */
export function TableFreshness({ freshness }: { freshness: TablePromises["freshness"] }) {
  const words = freshnessWords(freshness);
  if (!words.late) {
    return (
      <p className="text-sm text-slate-600" data-testid="table-freshness">
        {words.text}
      </p>
    );
  }
  return (
    <p
      className="rounded-md border border-amber-300 bg-amber-50 px-2 py-1 text-sm text-amber-900"
      data-testid="table-freshness"
      data-late="true"
    >
      <strong>{words.lead}</strong> {words.text}
    </p>
  );
}

/**
 * The table's columns with their dictionary entries, behind a disclosure (a table may have
 * hundreds of columns): name, type, unit, description and example; a column not described says so.
 */
export function DataDictionary({ table, columns }: { table: string; columns: TableColumn[] | null }) {
  if (!columns?.length) return null;
  const described = columns.filter((column) => column.description || column.unit || column.example).length;
  return (
    <details className="rounded-md border border-slate-200" data-testid="data-dictionary">
      <summary className="cursor-pointer px-3 py-2 text-sm font-medium text-slate-700">
        Data dictionary ({columns.length} column{columns.length === 1 ? "" : "s"}, {described} described)
      </summary>
      <ul className="divide-y divide-slate-100 border-t border-slate-200" aria-label={`Columns of ${table}`}>
        {columns.map((column) => (
          <li key={column.name} className="space-y-0.5 px-3 py-2 text-sm" data-testid="dictionary-column">
            <p className="flex flex-wrap items-baseline gap-x-2">
              <span className="font-mono font-medium break-all">{column.name}</span>
              <span className="font-mono text-xs text-slate-600">{column.type}</span>
              {column.unit && (
                <span className="text-xs text-slate-700" data-testid="column-unit">
                  Unit: {column.unit}
                </span>
              )}
            </p>
            {column.description ? (
              <p className="break-words whitespace-pre-line text-slate-700" data-testid="column-description">
                {column.description}
              </p>
            ) : (
              <p className="text-slate-600">Not described yet.</p>
            )}
            {column.example && (
              <p className="text-xs break-all text-slate-600">
                Example: <span className="font-mono">{column.example}</span>
              </p>
            )}
          </li>
        ))}
      </ul>
    </details>
  );
}

/** The table's data contract (ODCS) to download, YAML and JSON, from the dashboard's own route. */
export function ContractLinks({ table, href }: { table: string; href: string }) {
  return (
    <p className="flex flex-wrap items-center gap-x-3 gap-y-1 text-sm" data-testid="table-contract">
      <span className="text-slate-700">Data contract:</span>
      <a href={href} className={linkClass} download aria-label={`Download the data contract of ${table} as YAML`}>
        YAML
      </a>
      <a
        href={`${href}?format=json`}
        className={linkClass}
        download
        aria-label={`Download the data contract of ${table} as JSON`}
      >
        JSON
      </a>
    </p>
  );
}
