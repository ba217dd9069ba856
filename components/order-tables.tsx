import { DownloadLink } from "./download-link";
import { FileCard, type OrderFile } from "./file-card";
import { FilePreview } from "./file-preview";
import { QualityBadge, QualityReport } from "./quality-report";
import { VersionChart } from "./version-chart";
import { FORMAT_LABELS } from "./file-profile";
import { RENDITION_FORMATS, type RenditionFormat } from "@/lib/data-formats";
import type { PreviewResult } from "@/lib/http/browser-download";
import type { RowsResult, TableFilter } from "@/lib/http/browser-explore";
import { formatBytes, formatDate } from "@/lib/format";
import type { TableSummary, VersionSummary } from "@/lib/tables/history";
import { ContractLinks, DataDictionary, TableDescription, TableFreshness, type TablePromises } from "./table-promises";
import { Badge, Notice, linkClass } from "./ui";

const count = (value: number) => value.toLocaleString("en-US");

/**
 * An order's tables: each table's name, mode, key, current version, rows and when it was last
 * updated, a preview of its current version, its parts as the order lists them (each with its
 * downloads, original and other formats) and, on the dashboard, its version history with what
 * each version changed and the change file to download (`downloadHref` of a file id, as for files).
 * What each table promises (its description, freshness and data dictionary) comes from the API's
 * Table (`promises`, by name); its data contract downloads where `contractHref` is given.
 */
export function OrderTables({
  tables,
  files,
  downloadable,
  downloadHref,
  loadPreview,
  filterRows,
  loadChangesPreview,
  history,
  preparing,
  promises,
  contractHref,
}: {
  tables: TableSummary[];
  /** The API's Tables of the order: each one's description, dictionary and freshness, by name. */
  promises: ({ name: string } & TablePromises)[];
  /** Where a table's data contract downloads (a table with a version only); none on a share page. */
  contractHref?: (table: string) => string;
  /** The order's listed files (the API's `files`): a table's parts are those whose `table` names it. */
  files: OrderFile[];
  downloadable: boolean;
  downloadHref: (fileId: string) => string;
  /** The table's first rows as of its current version (a server action bound to the page's own access). */
  loadPreview: (table: string) => () => Promise<PreviewResult>;
  /** The table's rows through the preview's filter bar (a server action bound to the page's own access). */
  filterRows: (table: string) => (filter: TableFilter) => Promise<RowsResult>;
  /** A change file's first rows; without it no version history is shown (a share page shows current versions). */
  loadChangesPreview?: (fileId: string) => () => Promise<PreviewResult>;
  history: boolean;
  /** A change file's format still being made (the download route sent the browser back here). */
  preparing?: { fileId: string; format: RenditionFormat };
}) {
  if (tables.length === 0) return null;
  const preparingChanges =
    preparing &&
    tables.flatMap((table) =>
      table.versions
        .filter((version) => version.changeFileId === preparing.fileId)
        .map((version) => ({ table, version })),
    )[0];
  return (
    <section className="space-y-3" aria-labelledby="tables-heading">
      <h2 id="tables-heading" className="text-lg font-semibold">
        Tables
      </h2>
      <p className="text-sm text-slate-600">
        Each table keeps its name across refreshes; every refresh is a new version. The API, Delta Sharing and the
        clients read a table by its name.
      </p>
      {preparing && preparingChanges && (
        <Notice tone="info">
          <span data-testid="changes-preparing">
            The changes of {preparingChanges.table.name} version {preparingChanges.version.version} as{" "}
            {FORMAT_LABELS[preparing.format]} are being prepared: try again in a moment.{" "}
            <a href={`${downloadHref(preparing.fileId)}?format=${preparing.format}`} className={linkClass}>
              Download them as {FORMAT_LABELS[preparing.format]}
            </a>
          </span>
        </Notice>
      )}
      <ul className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white">
        {tables.map((table) => {
          const promised = promises.find((entry) => entry.name === table.name);
          return (
            <li key={table.name} className="space-y-3 p-4" data-testid="table-row">
              <div className="flex flex-col gap-3 sm:flex-row sm:items-start">
                <div className="min-w-0 flex-1 space-y-1">
                  <h3 className="flex flex-wrap items-center gap-2">
                    <span className="font-mono font-medium break-all">{table.name}</span>
                    <Badge tone={table.mode === "append" ? "amber" : "green"}>{table.mode}</Badge>
                  </h3>
                  <TableDescription description={promised?.description ?? null} />
                  <dl className="grid grid-cols-[auto_1fr] gap-x-3 text-sm text-slate-600">
                    <dt className="font-medium text-slate-700">Version</dt>
                    <dd data-testid="table-version">{table.version ?? "none yet"}</dd>
                    <dt className="font-medium text-slate-700">Rows</dt>
                    <dd>{table.rows === null ? "—" : count(table.rows)}</dd>
                    <dt className="font-medium text-slate-700">Updated</dt>
                    <dd>{formatDate(table.updatedAt)}</dd>
                    <dt className="font-medium text-slate-700">Key</dt>
                    <dd className="font-mono text-xs break-all">{table.key.length ? table.key.join(", ") : "none"}</dd>
                  </dl>
                  <TableFreshness freshness={promised?.freshness ?? null} />
                  {contractHref && table.version !== null && (
                    <ContractLinks table={table.name} href={contractHref(table.name)} />
                  )}
                </div>
                {downloadable && table.version !== null && (
                  <FilePreview
                    fileName={`${table.name}, version ${table.version}`}
                    load={loadPreview(table.name)}
                    filter={filterRows(table.name)}
                  />
                )}
              </div>
              <DataDictionary table={table.name} columns={promised?.columns ?? null} />
              <TableParts
                table={table}
                parts={files.filter((file) => file.table?.name === table.name)}
                downloadable={downloadable}
                downloadHref={downloadHref}
              />
              {history && table.versions.length > 0 && (
                <VersionHistory
                  table={table}
                  downloadable={downloadable}
                  downloadHref={downloadHref}
                  loadChangesPreview={loadChangesPreview}
                />
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/**
 * A table's parts as the order lists them: a snapshot's current version (and any publication under
 * way), an append table's every version. Downloads only: the table's preview above shows their rows.
 */
function TableParts({
  table,
  parts,
  downloadable,
  downloadHref,
}: {
  table: TableSummary;
  parts: OrderFile[];
  downloadable: boolean;
  downloadHref: (fileId: string) => string;
}) {
  if (parts.length === 0) return null;
  return (
    <div className="space-y-2" data-testid="table-parts">
      <h4 className="text-sm font-medium text-slate-700">
        {table.mode === "append" ? "Parts of every version" : "Parts"} ({parts.length})
      </h4>
      <ul
        className="divide-y divide-slate-100 rounded-md border border-slate-200"
        aria-label={`Parts of ${table.name}`}
      >
        {parts.map((part) => (
          <FileCard key={part.id} file={part} downloadable={downloadable} href={downloadHref(part.id)} />
        ))}
      </ul>
    </div>
  );
}

/** The history's columns from lg up (header row and each version's values); below lg each version is a card. */
const VERSION_COLUMNS = "lg:grid-cols-[3.5rem_9.5rem_4.5rem_7rem_minmax(0,1fr)_auto]";
/** A value's label: beside it in a card, for screen readers only where the header row names the column. */
const VERSION_LABEL = "font-medium text-slate-700 lg:sr-only";

function VersionHistory({
  table,
  downloadable,
  downloadHref,
  loadChangesPreview,
}: {
  table: TableSummary;
  downloadable: boolean;
  downloadHref: (fileId: string) => string;
  loadChangesPreview?: (fileId: string) => () => Promise<PreviewResult>;
}) {
  const shown = table.versions.length;
  return (
    <details className="rounded-md border border-slate-200" data-testid="version-history">
      <summary className="cursor-pointer px-3 py-2 text-sm font-medium text-slate-700">
        Version history ({table.versionCount} version{table.versionCount === 1 ? "" : "s"}
        {shown < table.versionCount ? `, latest ${shown} shown` : ""})
      </summary>
      <div className="border-b border-slate-200 px-3 py-3">
        <VersionChart table={table.name} points={table.chart} />
      </div>
      {/* A card per version on narrow screens (label beside value); from lg up the cards line up under one header row. */}
      <div
        aria-hidden
        className={`hidden gap-x-4 border-b border-slate-200 bg-slate-50 px-3 py-2 text-sm font-medium text-slate-700 lg:grid ${VERSION_COLUMNS}`}
      >
        <span>Version</span>
        <span>Made</span>
        <span className="text-right">Rows</span>
        <span>Parts</span>
        <span>Changes</span>
        <span>Change file</span>
      </div>
      <ol aria-label={`Versions of ${table.name}, newest first`} className="divide-y divide-slate-100">
        {table.versions.map((version) => (
          <li key={version.version} className="relative px-3 py-3 lg:py-2" data-testid="version-row">
            <dl
              className={`grid grid-cols-[6.5rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-sm lg:items-center lg:gap-x-4 lg:gap-y-0 ${VERSION_COLUMNS}`}
            >
              <dt className={VERSION_LABEL}>Version</dt>
              <dd className="font-mono">{version.version}</dd>
              <dt className={VERSION_LABEL}>Made</dt>
              <dd>{formatDate(version.createdAt)}</dd>
              <dt className={VERSION_LABEL}>Rows</dt>
              <dd className="lg:text-right">{count(version.rows)}</dd>
              <dt className={VERSION_LABEL}>Parts</dt>
              <dd>
                {version.parts} · {formatBytes(version.bytes)}
              </dd>
              <dt className={VERSION_LABEL}>Changes</dt>
              <dd data-testid="version-changes">
                <ChangeCounts changes={version.changes} />
              </dd>
              <dt className={VERSION_LABEL}>Change file</dt>
              <dd>
                <ChangeFileLinks
                  table={table.name}
                  version={version}
                  downloadable={downloadable}
                  downloadHref={downloadHref}
                  loadChangesPreview={loadChangesPreview}
                />
              </dd>
            </dl>
            {/* Block, not flex: the report's tables then scroll in their own box rather than widen the page. */}
            <div className="mt-2 min-w-0 space-y-1" data-testid="version-quality">
              <QualityBadge quality={version.quality} />
              <QualityReport
                table={table.name}
                version={version.version}
                quality={version.quality}
                report={version.report}
              />
            </div>
          </li>
        ))}
      </ol>
    </details>
  );
}

function ChangeCounts({ changes }: { changes: VersionSummary["changes"] }) {
  if (!changes) return <span className="text-slate-500">being worked out</span>;
  return (
    <span>
      <ChangeCount value={changes.inserted} sign="+" tone="text-green-800" label="inserted" />,{" "}
      <ChangeCount value={changes.updated} sign="" tone="text-amber-800" label="updated" />,{" "}
      <ChangeCount value={changes.deleted} sign="−" tone="text-red-800" label="deleted" />
    </span>
  );
}

/** A count of one kind of change: signed and in its colour, or a plain grey 0 when there were none. */
function ChangeCount({ value, sign, tone, label }: { value: number; sign: string; tone: string; label: string }) {
  if (value === 0) return <span className="text-slate-500">0 {label}</span>;
  return (
    <span className={tone}>
      {sign}
      {count(value)} {label}
    </span>
  );
}

function ChangeFileLinks({
  table,
  version,
  downloadable,
  downloadHref,
  loadChangesPreview,
}: {
  table: string;
  version: VersionSummary;
  downloadable: boolean;
  downloadHref: (fileId: string) => string;
  loadChangesPreview?: (fileId: string) => () => Promise<PreviewResult>;
}) {
  if (!version.changeFileId) return <span className="text-slate-500">being made</span>;
  if (!downloadable) return <span className="text-slate-500">downloads once delivered</span>;
  const href = downloadHref(version.changeFileId);
  const label = `changes of ${table} version ${version.version}`;
  return (
    <div className="flex flex-wrap items-center gap-x-3 gap-y-1 lg:flex-nowrap lg:whitespace-nowrap">
      {RENDITION_FORMATS.map((format) =>
        // Parquet is the change file itself; CSV and JSON Lines are made on first request, waited for in place.
        format === "parquet" ? (
          <a key={format} href={href} className={linkClass} aria-label={`Download ${label} as Parquet`}>
            {FORMAT_LABELS[format]}
          </a>
        ) : (
          <DownloadLink
            key={format}
            href={`${href}?format=${format}`}
            className={linkClass}
            label={`Download ${label} as ${FORMAT_LABELS[format]}`}
          >
            {FORMAT_LABELS[format]}
          </DownloadLink>
        ),
      )}
      {loadChangesPreview && <FilePreview fileName={label} load={loadChangesPreview(version.changeFileId)} changes />}
    </div>
  );
}
