import { CopyButton } from "./copy-button";
import { DownloadLink } from "./download-link";
import { FilePreview } from "./file-preview";
import { FileProfile, FORMAT_LABELS } from "./file-profile";
import { isOwnFormat, RENDITION_FORMATS } from "@/lib/data-formats";
import type { PreviewResult } from "@/lib/http/browser-download";
import { formatBytes, formatDate } from "@/lib/format";
import type { OrderView } from "@/lib/orders/queries";
import { buttonClass } from "./ui";

export type OrderFile = OrderView["files"][number];

/**
 * One file of an order, as a list item: what is inside it, the table it is a part of, a preview of
 * its first rows, and download links for the original and its other formats (`href`: the
 * dashboard's or a share link's route, both of which redirect to a short-lived signed URL).
 */
export function FileCard({
  file,
  downloadable,
  href,
  loadPreview,
}: {
  file: OrderFile;
  downloadable: boolean;
  href: string;
  /**
   * The file's first rows (a server action bound to the page's own access: the session or the share
   * link). None for a table's part: the table's own preview shows its parts' rows, so one Preview a table.
   */
  loadPreview?: () => Promise<PreviewResult>;
}) {
  return (
    <li className="flex flex-col gap-3 p-4 sm:flex-row sm:items-start" data-testid="file-row">
      <div className="min-w-0 flex-1 space-y-1">
        <p className="font-medium break-all">{file.name}</p>
        <p className="text-sm text-slate-600">
          {formatBytes(file.size)} · {file.content_type} · added {formatDate(file.created_at)}
        </p>
        <div className="flex flex-wrap items-center gap-2">
          <p className="font-mono text-xs break-all text-slate-500">
            <span className="sr-only">SHA-256: </span>
            <span aria-hidden>sha256 </span>
            <span data-testid="file-sha256">{file.sha256}</span>
          </p>
          <CopyButton value={file.sha256} label={`Copy sha256 of ${file.name}`} />
        </div>
        {file.table && (
          <p className="text-sm text-slate-600" data-testid="file-table">
            Part of table <span className="font-mono">{file.table.name}</span>, version {file.table.version}
          </p>
        )}
        <FileProfile file={file} />
        {downloadable && <OtherFormats file={file} href={href} />}
      </div>
      <div className="flex flex-wrap gap-2">
        {downloadable && loadPreview && file.profile_status === "ready" && (
          <FilePreview fileName={file.name} load={loadPreview} />
        )}
        {downloadable ? (
          // A plain link: the download is a redirect to a signed URL, not a page.

          <a href={href} className={buttonClass("primary", "sm")} download={file.name}>
            Download<span className="sr-only"> {file.name}</span>
          </a>
        ) : (
          <button
            type="button"
            disabled
            className={buttonClass("secondary", "sm")}
            aria-describedby="files-not-downloadable"
          >
            Download unavailable
          </button>
        )}
      </div>
    </li>
  );
}

/**
 * Download links of a profiled file's data in the formats it is not in (a gzipped CSV's "CSV" would
 * be the original again), except a rendition that could not be made. One still being made is waited
 * for in place (DownloadLink); without script the route sends the browser back to the page.
 */
function OtherFormats({ file, href }: { file: OrderFile; href: string }) {
  if (file.profile_status !== "ready") return null;
  const formats = RENDITION_FORMATS.filter(
    (format) =>
      !isOwnFormat(file.format, format) &&
      file.renditions.find((rendition) => rendition.format === format)?.status !== "failed",
  );
  if (formats.length === 0) return null;
  return (
    <div className="flex flex-wrap items-center gap-2 pt-1">
      <span className="text-sm text-slate-600">Other formats</span>
      {formats.map((format) => {
        const size = file.renditions.find(
          (rendition) => rendition.format === format && rendition.status === "ready",
        )?.size;
        return (
          <DownloadLink
            key={format}
            href={`${href}?format=${format}`}
            className={`${buttonClass("secondary", "sm")} gap-1`}
          >
            <span className="sr-only">Download {file.name} as </span>
            {FORMAT_LABELS[format]}
            {size != null && <span className="font-normal text-slate-600">{` (${formatBytes(size)})`}</span>}
          </DownloadLink>
        );
      })}
    </div>
  );
}
