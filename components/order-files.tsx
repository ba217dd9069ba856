import { CopyButton } from "./copy-button";
import { formatBytes, formatDate } from "@/lib/format";
import type { OrderView } from "@/lib/orders/queries";
import { Badge, Notice, buttonClass } from "./ui";

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
 * An order's files with download links (`downloadHref`: the dashboard's or a share link's
 * route, both of which redirect to a short-lived signed URL).
 */
export function OrderFiles({
  order,
  downloadHref,
  reasonShown = false,
}: {
  order: OrderView;
  downloadHref: (fileId: string) => string;
  /** The page already says why downloads are refused (after a refused download): one banner, not two. */
  reasonShown?: boolean;
}) {
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
      {order.files.length === 0 ? (
        <p className="text-slate-600">No files yet.</p>
      ) : (
        <ul className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white">
          {order.files.map((file) => (
            <li key={file.id} className="flex flex-col gap-3 p-4 sm:flex-row sm:items-center" data-testid="file-row">
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
              </div>
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
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
