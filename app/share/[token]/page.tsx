import type { Metadata } from "next";
import { OrderFiles, OrderStatusBadge, notDownloadableReason } from "@/components/order-files";
import { Notice } from "@/components/ui";
import { formatDate } from "@/lib/format";
import { getOrder } from "@/lib/orders/queries";
import { CLIENT_IP_HEADER } from "@/lib/security/header";
import { recordShareOpened } from "@/lib/security/log";
import { resolveShareToken } from "@/lib/shares";
import { headers } from "next/headers";

export const metadata: Metadata = { title: "Shared order", robots: { index: false, follow: false } };

/** The public page of one shared order. The token opens this order only: no session, no other order. */
export default async function SharedOrderPage({
  params,
  searchParams,
}: {
  params: Promise<{ token: string }>;
  searchParams: Promise<{ refused?: string }>;
}) {
  const { token } = await params;
  const shared = await resolveShareToken(token);
  if (!shared) {
    return (
      <div className="mx-auto max-w-md space-y-3" data-testid="share-unavailable">
        <h1 className="text-2xl font-bold tracking-tight">This share link does not work</h1>
        <p className="text-slate-700">
          It may have been revoked or have expired, or it was not copied whole. Ask the person who shared it for a new
          link.
        </p>
      </div>
    );
  }
  await recordShareOpened(shared.buyerId, shared.linkId, shared.orderName, (await headers()).get(CLIENT_IP_HEADER));
  const order = await getOrder(shared.buyerId, shared.orderId);
  const refused = (await searchParams).refused !== undefined;
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
      </header>
      {refused && (
        <Notice tone="error">
          <span data-testid="download-refused">Download refused. {notDownloadableReason(order.status)}</span>
        </Notice>
      )}
      <OrderFiles order={order} downloadHref={(fileId) => `/share/${encodeURIComponent(token)}/files/${fileId}`} />
    </div>
  );
}
