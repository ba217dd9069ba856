import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { OrderFiles, OrderNotices, OrderStatusBadge, notDownloadableReason } from "@/components/order-files";
import { OrderTables } from "@/components/order-tables";
import { TableNoticeBanner } from "@/components/table-notices";
import { Notice, linkClass } from "@/components/ui";
import { currentBuyer, requireBuyer } from "@/lib/auth/session";
import { AppError } from "@/lib/errors";
import { CopyButton } from "@/components/copy-button";
import { preparingRendition } from "@/lib/http/browser-download";
import { formatDate, formatRelative } from "@/lib/format";
import { getOrder, orderPageDetails } from "@/lib/orders/queries";
import { listShareLinks, SHARE_LINK_EXPIRY_DAYS } from "@/lib/share-links";
import { orderTables } from "@/lib/tables/history";
import { filterTableAction, previewFileAction, previewTableAction } from "./preview-action";
import { ShareLinks } from "./share-links";

/** The tab names the order, for its owner only (anyone else gets the plain title). */
export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  const buyer = await currentBuyer().catch(() => undefined);
  const { id } = await params;
  const order = buyer && (await orderPageDetails(buyer.id, id));
  return { title: order ? order.name : "Order" };
}

export default async function OrderPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<{ refused?: string; preparing?: string; format?: string }>;
}) {
  const { id } = await params;
  const buyer = await requireBuyer(`/orders/${encodeURIComponent(id)}`);
  const order = await getOrder(buyer.id, id).catch((error: unknown) => {
    if (error instanceof AppError && error.code === "order_not_found") notFound();
    throw error;
  });
  const [links, dates, tables] = await Promise.all([
    listShareLinks(buyer.id, order.id),
    orderPageDetails(buyer.id, order.id),
    orderTables(buyer.id, order.id),
  ]);
  const query = await searchParams;
  const refused = query.refused !== undefined;
  return (
    <div className="space-y-8">
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link href="/orders" className={linkClass}>
          ← All orders
        </Link>
      </nav>
      <header className="space-y-2">
        <div className="flex flex-wrap items-center gap-3">
          <h1 className="text-2xl font-bold tracking-tight">{order.name}</h1>
          <OrderStatusBadge status={order.status} />
        </div>
        <dl className="grid gap-x-6 gap-y-1 text-sm text-slate-600 sm:grid-cols-[auto_1fr]">
          <dt className="font-medium text-slate-700">Order id</dt>
          <dd className="flex flex-wrap items-center gap-2">
            <span className="font-mono text-xs break-all">{order.id}</span>
            <CopyButton value={order.id} label="Copy order id" />
          </dd>
          <dt className="font-medium text-slate-700">Paid</dt>
          <dd>{formatDate(order.paid_at)}</dd>
          {order.delivered_at && (
            <>
              <dt className="font-medium text-slate-700">Delivered</dt>
              <dd>{formatDate(order.delivered_at)}</dd>
            </>
          )}
          {order.status === "refunded" && (
            <>
              <dt className="font-medium text-slate-700">Refunded</dt>
              <dd data-testid="refunded-on">
                {dates?.refundedAt ? `Refunded on ${formatDate(dates.refundedAt)}` : "Refunded"}
              </dd>
            </>
          )}
          {order.status === "unfinished" && (
            <>
              <dt className="font-medium text-slate-700">Delivery</dt>
              <dd data-testid="what-next">
                Not delivered yet. The files appear here as they are added, and download once the order is delivered;
                this page then says when it was.
              </dd>
            </>
          )}
        </dl>
        {/* Only a delivered order's tables can be queried: a refunded or unfinished one would only be refused. */}
        {tables.length > 0 && order.downloadable && (
          <p className="text-sm">
            <Link href={`/orders/${order.id}/query`} className={linkClass} data-testid="query-link">
              Query these tables with SQL
            </Link>
          </p>
        )}
      </header>
      <TableNoticeBanner tables={order.tables} />
      {refused && (
        <Notice tone="error">
          <span id="files-not-downloadable" data-testid="download-refused">
            Download refused. {notDownloadableReason(order.status)}
          </span>
        </Notice>
      )}
      <OrderNotices
        order={order}
        downloadHref={(fileId) => `/orders/${order.id}/files/${fileId}`}
        reasonShown={refused}
        preparing={preparingRendition(query)}
      />
      <OrderTables
        tables={tables}
        files={order.files}
        downloadable={order.downloadable}
        downloadHref={(fileId) => `/orders/${order.id}/files/${fileId}`}
        loadPreview={(table) => previewTableAction.bind(null, order.id, table)}
        filterRows={(table) => filterTableAction.bind(null, order.id, table)}
        loadChangesPreview={(fileId) => previewFileAction.bind(null, order.id, fileId)}
        history
        preparing={preparingRendition(query)}
        promises={order.tables}
        contractHref={(table) => `/orders/${order.id}/tables/${table}/contract`}
      />
      <OrderFiles
        order={order}
        downloadHref={(fileId) => `/orders/${order.id}/files/${fileId}`}
        loadPreview={(fileId) => previewFileAction.bind(null, order.id, fileId)}
      />
      <ShareLinks
        orderId={order.id}
        expiryChoices={[...SHARE_LINK_EXPIRY_DAYS]}
        notShareable={
          order.status === "delivered"
            ? undefined
            : `Share links can be made for delivered orders only: this order is ${order.status}, so its files cannot be downloaded.`
        }
        links={links.map((link) => ({
          id: link.id,
          display: link.display,
          label: link.label,
          status: link.status,
          createdAt: formatDate(link.createdAt),
          expiresAt: formatDate(link.expiresAt, "never"),
          opened:
            link.openCount === 0
              ? "not opened yet"
              : `opened ${link.openCount} time${link.openCount === 1 ? "" : "s"}, last ${formatRelative(link.lastOpenedAt!)}`,
          lastOpenedAt: link.lastOpenedAt ? formatDate(link.lastOpenedAt) : undefined,
          downloads: `${link.downloadCount} download${link.downloadCount === 1 ? "" : "s"}`,
        }))}
      />
    </div>
  );
}
