import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { Notice, linkClass } from "@/components/ui";
import { currentBuyer, requireBuyer } from "@/lib/auth/session";
import { AppError } from "@/lib/errors";
import { pastQuery, queryHistory } from "@/lib/explore/history";
import { browserOrderTables } from "@/lib/http/browser-explore";
import { getOrder, orderPageDetails } from "@/lib/orders/queries";
import { QueryConsole, type TableColumns } from "./query-console";

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  const buyer = await currentBuyer().catch(() => undefined);
  const { id } = await params;
  const order = buyer && (await orderPageDetails(buyer.id, id));
  return { title: order ? `Query ${order.name}` : "Query" };
}

/**
 * The Query page of one of the buyer's orders (contract Part 7): SQL over the order's tables, run
 * in the sandboxed engine by the page's server action, the tables and their columns beside the
 * editor, the result as a grid and as a download, and the buyer's last queries. `?from=<query>`
 * opens one of those again.
 */
export default async function QueryPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<{ from?: string }>;
}) {
  const { id } = await params;
  const buyer = await requireBuyer(`/orders/${encodeURIComponent(id)}/query`);
  const order = await getOrder(buyer.id, id).catch((error: unknown) => {
    if (error instanceof AppError && error.code === "order_not_found") notFound();
    throw error;
  });
  const { from } = await searchParams;
  const [history, reopened] = await Promise.all([queryHistory(buyer.id), from ? pastQuery(buyer.id, from) : undefined]);
  const tables = order.downloadable ? await browserOrderTables(buyer.id, order.id) : [];
  const first = tables[0]?.name;
  const initialSql =
    reopened?.orderId === order.id
      ? reopened.sql
      : first
        ? `SELECT *\nFROM "${first.replaceAll('"', '""')}"\nLIMIT 10`
        : "";
  return (
    <div className="space-y-6">
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link href={`/orders/${order.id}`} className={linkClass}>
          ← {order.name}
        </Link>
      </nav>
      <header className="space-y-2">
        <h1 className="text-2xl font-bold tracking-tight">Query {order.name}</h1>
        <p className="max-w-3xl text-sm text-slate-600">
          One <code className="font-mono text-xs">SELECT</code> (or{" "}
          <code className="font-mono text-xs">WITH … SELECT</code>) over this order&apos;s tables, run on the server
          over every row: each table by its name (its current version),{" "}
          <code className="font-mono text-xs">&quot;name@3&quot;</code> for version 3 and{" "}
          <code className="font-mono text-xs">&quot;name@changes&quot;</code> for every change. At most 10 seconds of
          work and 1,000 rows shown; the API and the clients run the same queries.
        </p>
      </header>
      {!order.downloadable ? (
        <Notice tone="warning">
          <span data-testid="query-refused">
            {order.status === "refunded"
              ? "This order was refunded, so its tables can no longer be queried."
              : "This order is not delivered yet. Its tables can be queried once it is delivered."}
          </span>
        </Notice>
      ) : tables.length === 0 ? (
        <Notice tone="info">This order has no tables to query: its files are listed on the order page.</Notice>
      ) : (
        <QueryConsole
          orderId={order.id}
          tables={tables.map((table) => withDictionary(table, order.tables))}
          initialSql={initialSql}
          history={history}
        />
      )}
    </div>
  );
}

/** A table's columns for the sidebar with the data dictionary's description and unit (the API's Table's). */
function withDictionary(
  table: { name: string; columns: { name: string; type: string }[] },
  described: Awaited<ReturnType<typeof getOrder>>["tables"],
): TableColumns {
  const api = described.find((entry) => entry.name === table.name);
  return {
    name: table.name,
    description: api?.description ?? null,
    columns: table.columns.map((column) => {
      const doc = api?.columns?.find((entry) => entry.name === column.name);
      return { ...column, description: doc?.description ?? null, unit: doc?.unit ?? null };
    }),
  };
}
