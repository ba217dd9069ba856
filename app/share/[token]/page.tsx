import type { Metadata } from "next";
import { headers } from "next/headers";
import { OrderFiles, OrderNotices, OrderStatusBadge, notDownloadableReason } from "@/components/order-files";
import { OrderTables } from "@/components/order-tables";
import { Notice } from "@/components/ui";
import { preparingRendition } from "@/lib/http/browser-download";
import { formatDate } from "@/lib/format";
import { getOrder } from "@/lib/orders/queries";
import { CLIENT_IP_HEADER } from "@/lib/security/header";
import { recordShareOpened } from "@/lib/security/log";
import { countShareOpened, lookUpShareToken, type ClosedShareLink } from "@/lib/share-links";
import { orderTables } from "@/lib/tables/history";
import { sharedFilterTableAction, sharedPreviewAction, sharedTablePreviewAction } from "./preview-action";

/** The tab names the shared order while the link works; the page is never indexed. */
export async function generateMetadata({ params }: { params: Promise<{ token: string }> }): Promise<Metadata> {
  const shared = await lookUpShareToken((await params).token);
  return {
    title: shared?.active ? `${shared.orderName} (shared)` : "Shared order",
    robots: { index: false, follow: false },
  };
}

/**
 * The public page of one shared order. The token opens this order only: no session, no other
 * order. The visitor may have no account here, so nothing on it asks them to sign in.
 */
export default async function SharedOrderPage({
  params,
  searchParams,
}: {
  params: Promise<{ token: string }>;
  searchParams: Promise<{ refused?: string; preparing?: string; format?: string }>;
}) {
  const { token } = await params;
  const shared = await lookUpShareToken(token);
  if (!shared?.active) return <LinkDoesNotWork closed={shared} />;

  const ip = (await headers()).get(CLIENT_IP_HEADER);
  await Promise.all([
    countShareOpened(shared.linkId),
    recordShareOpened(shared.buyerId, shared.linkId, shared.orderName, ip),
  ]);
  const [order, tables] = await Promise.all([
    getOrder(shared.buyerId, shared.orderId),
    orderTables(shared.buyerId, shared.orderId, 1),
  ]);
  const query = await searchParams;
  const refused = query.refused !== undefined;
  return (
    <div className="space-y-8">
      <header className="space-y-2">
        <p className="text-sm font-medium text-slate-500">Shared order</p>
        <div className="flex flex-wrap items-center gap-3">
          <h1 className="text-2xl font-bold tracking-tight">{order.name}</h1>
          <OrderStatusBadge status={order.status} />
        </div>
        <p className="text-sm text-slate-600">
          Paid {formatDate(order.paid_at)} · delivered {formatDate(order.delivered_at, "not yet")}
        </p>
        <p className="text-sm text-slate-700" data-testid="shared-by">
          Shared with you by <strong className="break-all">{shared.sharedBy}</strong>.{" "}
          {shared.expiresAt
            ? `This link works until ${formatDate(shared.expiresAt)}.`
            : "This link works until they revoke it."}{" "}
          No account is needed to download these files.
        </p>
      </header>
      {refused && (
        <Notice tone="error">
          <span data-testid="download-refused">Download refused. {notDownloadableReason(order.status)}</span>
        </Notice>
      )}
      <OrderNotices
        order={order}
        downloadHref={(fileId) => `/share/${encodeURIComponent(token)}/files/${fileId}`}
        preparing={preparingRendition(query)}
      />
      <OrderTables
        tables={tables}
        files={order.files}
        downloadable={order.downloadable}
        downloadHref={(fileId) => `/share/${encodeURIComponent(token)}/files/${fileId}`}
        loadPreview={(table) => sharedTablePreviewAction.bind(null, token, table)}
        filterRows={(table) => sharedFilterTableAction.bind(null, token, table)}
        history={false}
        promises={order.tables}
      />
      <OrderFiles
        order={order}
        downloadHref={(fileId) => `/share/${encodeURIComponent(token)}/files/${fileId}`}
        loadPreview={(fileId) => sharedPreviewAction.bind(null, token, fileId)}
      />
    </div>
  );
}

function LinkDoesNotWork({ closed }: { closed?: ClosedShareLink }) {
  const why = !closed
    ? "It was not copied whole, or it never existed."
    : closed.status === "revoked"
      ? `It was revoked on ${formatDate(closed.since)}.`
      : `It expired on ${formatDate(closed.since)}.`;
  return (
    <div className="mx-auto max-w-md space-y-3" data-testid="share-unavailable">
      <h1 className="text-2xl font-bold tracking-tight">This share link does not work</h1>
      <p className="text-slate-700" data-testid="share-unavailable-reason">
        {why}
      </p>
      <p className="text-slate-700">Ask the person who shared it with you for a new link.</p>
    </div>
  );
}
