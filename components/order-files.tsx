import { CopyButton } from "./copy-button";
import { FilePreview } from "./file-preview";
import { FileProfile, FORMAT_LABELS } from "./file-profile";
import { isOwnFormat, RENDITION_FORMATS, type RenditionFormat } from "@/lib/datasets/formats";
import type { PreviewResult } from "@/lib/http/browser-download";
import { formatBytes, formatDate } from "@/lib/format";
import type { OrderView } from "@/lib/orders/queries";
import { Badge, Notice, buttonClass, linkClass } from "./ui";

type OrderFile = OrderView["files"][number];

const STATUS_TONE = { delivered: "green", refunded: "red", unfinished: "amber" } as const;

export function OrderStatusBadge({ status }: { status: OrderView["status"] }) {
  return <Badge tone={STATUS_TONE[status]}>{status[0]!.toUpperCase() + status.slice(1)}</Badge>;
}

/** Why an order's files cannot be downloaded, in the buyer's words. */
export function notDownloadableReason(status: OrderView["status"]): string {
  return status === "refunded"
    ? "This order was refunded, so its files can no longer be downloaded."
    : "This order is not delivered yet. Its files can be downloaded once it is delivered.";
}

/**
 * An order's files: what is inside each, a preview of its first rows, and download links
 * (`downloadHref`: the dashboard's or a share link's route, both of which redirect to a
 * short-lived signed URL; `?format=` for the data in another format).
 */
export function OrderFiles({
  order,
  downloadHref,
  loadPreview,
  reasonShown = false,
  preparing,
}: {
  order: OrderView;
  downloadHref: (fileId: string) => string;
  /** The file's first rows (a server action bound to the page's own access: the session or the share link). */
  loadPreview: (fileId: string) => () => Promise<PreviewResult>;
  /** The page already says why downloads are refused (after a refused download): one banner, not two. */
  reasonShown?: boolean;
  /** A format asked for that is still being made (the download route sent the browser back here). */
  preparing?: { fileId: string; format: RenditionFormat };
}) {
  const preparingFile = preparing && order.files.find((file) => file.id === preparing.fileId);
  return (
    <section className="space-y-3" aria-labelledby="files-heading">
      <h2 id="files-heading" className="text-lg font-semibold">
        Files
      </h2>
      {!order.downloadable && !reasonShown && (
        <Notice tone="warning">
          <span id="files-not-downloadable" data-testid="not-downloadable">
            {notDownloadableReason(order.status)}
          </span>
        </Notice>
      )}
      {preparing && preparingFile && (
        <Notice tone="info">
          <span data-testid="rendition-preparing">
            {preparingFile.name} as {FORMAT_LABELS[preparing.format]} is being prepared: try again in a moment.{" "}
            <a href={`${downloadHref(preparingFile.id)}?format=${preparing.format}`} className={linkClass}>
              Download {preparingFile.name} as {FORMAT_LABELS[preparing.format]}
            </a>
          </span>
        </Notice>
      )}
      {order.files.length === 0 ? (
        <p className="text-slate-600">No files yet.</p>
      ) : (
        <ul className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white">
          {order.files.map((file) => (
            <li key={file.id} className="flex flex-col gap-3 p-4 sm:flex-row sm:items-start" data-testid="file-row">
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
                <FileProfile file={file} />
                {order.downloadable && <OtherFormats file={file} href={downloadHref(file.id)} />}
              </div>
              <div className="flex flex-wrap gap-2">
                {order.downloadable && file.profile_status === "ready" && (
                  <FilePreview fileName={file.name} load={loadPreview(file.id)} />
                )}
                {order.downloadable ? (
                  // A plain link: the download is a redirect to a signed URL, not a page.

                  <a href={downloadHref(file.id)} className={buttonClass("primary", "sm")} download={file.name}>
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
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * Download links of a profiled file's data in the formats it is not in (a gzipped CSV's "CSV" would
 * be the original again), except a rendition that could not be made. No `download` attribute: a
 * rendition still being made sends the browser back to the order page, which must open as a page.
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
          <a key={format} href={`${href}?format=${format}`} className={`${buttonClass("secondary", "sm")} gap-1`}>
            <span className="sr-only">Download {file.name} as </span>
            {FORMAT_LABELS[format]}
            {size != null && <span className="font-normal text-slate-600">{` (${formatBytes(size)})`}</span>}
          </a>
        );
      })}
    </div>
  );
}
