import type { Metadata } from "next";
import Link from "next/link";
import { OrderStatusBadge } from "@/components/order-files";
import { buttonClass, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { UsageChart } from "@/components/usage-chart";
import { formatDate } from "@/lib/format";
import { accountUsage } from "@/lib/keys/usage";
import { orderPage } from "@/lib/orders/queries";

export const metadata: Metadata = { title: "Orders" };
const PAGE_SIZE = 20;

export default async function OrdersPage({ searchParams }: { searchParams: Promise<{ offset?: string }> }) {
  const buyer = await requireBuyer("/orders");
  const requested = Number((await searchParams).offset ?? 0);
  const offset = Number.isSafeInteger(requested) && requested > 0 ? requested : 0;
  const [page, usage] = await Promise.all([orderPage(buyer.id, { limit: PAGE_SIZE, offset }), accountUsage(buyer.id)]);
  return (
    <div className="space-y-6">
      <header className="space-y-2">
        <h1 className="text-2xl font-bold tracking-tight">Orders</h1>
        <p className="text-slate-600">Your paid dataset orders, newest first. Delivered orders can be downloaded.</p>
        <section
          aria-labelledby="account-usage-heading"
          className="max-w-xl space-y-2 rounded-lg border border-slate-200 bg-white p-4"
        >
          <div className="flex flex-wrap items-baseline justify-between gap-2">
            <h2 id="account-usage-heading" className="font-medium">
              API usage
            </h2>
            <p className="text-sm text-slate-600">
              All your keys: <span data-testid="account-requests-24h">{usage.last24Hours}</span> requests in the last 24
              hours
            </p>
          </div>
          <UsageChart days={usage.days} label="API usage of this account" />
        </section>
      </header>
      {page.data.length === 0 ? (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
          {offset === 0 ? "No paid orders yet for " + buyer.email + "." : "No more orders."}
        </p>
      ) : (
        <ul className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white">
          {page.data.map((order) => (
            <li
              key={order.id}
              className="flex flex-col items-start gap-2 p-4 sm:flex-row sm:items-center sm:justify-between"
              data-testid="order-row"
            >
              <div className="min-w-0 space-y-1">
                <Link href={`/orders/${order.id}`} className={`${linkClass} font-medium`}>
                  {order.name}
                </Link>
                <p className="text-sm text-slate-600">
                  Paid {formatDate(order.paid_at)} · {order.files.length} file{order.files.length === 1 ? "" : "s"} ·{" "}
                  <span className="font-mono text-xs">{order.id}</span>
                </p>
              </div>
              <OrderStatusBadge status={order.status} />
            </li>
          ))}
        </ul>
      )}
      <nav aria-label="Pages" className="flex justify-between">
        {offset > 0 ? (
          <Link href={`/orders?offset=${Math.max(0, offset - PAGE_SIZE)}`} className={buttonClass("secondary", "sm")}>
            ← Newer
          </Link>
        ) : (
          <span />
        )}
        {page.next_offset !== null && (
          <Link href={`/orders?offset=${page.next_offset}`} className={buttonClass("secondary", "sm")}>
            Older →
          </Link>
        )}
      </nav>
    </div>
  );
}
