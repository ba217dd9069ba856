import { FileCard } from "./file-card";
import { FORMAT_LABELS } from "./file-profile";
import type { RenditionFormat } from "@/lib/data-formats";
import type { PreviewResult } from "@/lib/http/browser-download";
import type { OrderView } from "@/lib/orders/queries";
import { Badge, Notice, linkClass } from "./ui";

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
 * What the page says about the order's downloads before its tables and files: why they are refused,
 * or that a format asked for is still being made (the download route sent the browser back here).
 */
export function OrderNotices({
  order,
  downloadHref,
  reasonShown = false,
  preparing,
}: {
  order: OrderView;
  downloadHref: (fileId: string) => string;
  /** The page already says why downloads are refused (after a refused download): one banner, not two. */
  reasonShown?: boolean;
  preparing?: { fileId: string; format: RenditionFormat };
}) {
  const preparingFile = preparing && order.files.find((file) => file.id === preparing.fileId);
  return (
    <>
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
    </>
  );
}

/**
 * The order's files that belong to no table (binary files, a file delivered before tables; a
 * table's parts are listed with their table, components/order-tables.tsx): what is inside each, a
 * preview and download links. Shown when there are such files, or when the order has nothing yet.
 */
export function OrderFiles({
  order,
  downloadHref,
  loadPreview,
}: {
  order: OrderView;
  downloadHref: (fileId: string) => string;
  /** The file's first rows (a server action bound to the page's own access: the session or the share link). */
  loadPreview: (fileId: string) => () => Promise<PreviewResult>;
}) {
  const files = order.files.filter((file) => file.table === null);
  const hasTables = order.files.some((file) => file.table !== null) || order.tables.length > 0;
  if (files.length === 0 && hasTables) return null;
  return (
    <section className="space-y-3" aria-labelledby="files-heading">
      <h2 id="files-heading" className="text-lg font-semibold">
        {hasTables ? "Other files" : "Files"}
      </h2>
      {files.length === 0 ? (
        <p className="text-slate-600">No files yet.</p>
      ) : (
        <ul className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white">
          {files.map((file) => (
            <FileCard
              key={file.id}
              file={file}
              downloadable={order.downloadable}
              href={downloadHref(file.id)}
              loadPreview={loadPreview(file.id)}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
