import type { FileFormat } from "@/lib/data-formats";
import type { OrderView } from "@/lib/orders/queries";

type OrderFile = OrderView["files"][number];

export const FORMAT_LABELS: Record<FileFormat, string> = {
  csv: "CSV",
  tsv: "TSV",
  json: "JSON",
  jsonl: "JSON Lines",
  parquet: "Parquet",
  binary: "Binary",
};

const count = (n: number, one: string, many: string) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/**
 * What is inside a data file, as its profile says: the format, and once read its rows and
 * columns (the columns behind a disclosure: a file may have hundreds), or why it could not be
 * read. Binary files have no profile, so nothing.
 */
export function FileProfile({ file }: { file: OrderFile }) {
  if (file.profile_status === "none") return null;
  const format = `${FORMAT_LABELS[file.format]}${file.compression === "gzip" ? " (gzip)" : ""}`;
  if (file.profile_status === "pending") {
    return (
      <p className="text-sm text-slate-600" data-testid="file-profile">
        {format} · Reading the file…
      </p>
    );
  }
  if (file.profile_status === "failed") {
    return (
      // The sentence names the format it tried ("could not be read as CSV: …").
      <p className="text-sm text-amber-900" data-testid="file-profile">
        <span data-testid="profile-error">{file.profile_error}</span>
      </p>
    );
  }
  const columns = file.columns ?? [];
  return (
    <div className="space-y-1 text-sm text-slate-600" data-testid="file-profile">
      <p>
        {format} · {count(file.rows ?? 0, "row", "rows")}
      </p>
      <details>
        <summary className="cursor-pointer text-slate-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600">
          {count(columns.length, "column", "columns")}
          <span className="sr-only"> of {file.name}</span>
        </summary>
        <ul className="mt-2 space-y-1 border-l-2 border-slate-200 pl-3" data-testid="file-columns">
          {columns.map((column, index) => (
            <li key={index} className="flex flex-wrap items-baseline gap-x-2">
              <span className="font-mono break-all text-slate-900">{column.name}</span>{" "}
              <span className="font-mono text-xs break-all text-slate-600">{column.type}</span>
              {column.nullable && <span className="text-xs text-slate-600 italic"> nullable</span>}
            </li>
          ))}
        </ul>
      </details>
    </div>
  );
}
