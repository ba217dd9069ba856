import type { Metadata } from "next";
import Link from "next/link";
import { Badge, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { destinationRuns } from "@/lib/exports/api";
import { listDestinations, orderChoices } from "@/lib/exports/destinations";
import { DEFAULT_KEY_TEMPLATE } from "@/lib/exports/template";
import { formatBytes, formatDate } from "@/lib/format";
import { DestinationActions } from "./destination-actions";
import { DestinationForm } from "./destination-controls";
import { RunApproval } from "./run-approval";

export const metadata: Metadata = { title: "Exports" };

const STATE_TONE = {
  pending: "amber",
  awaiting_approval: "amber",
  running: "amber",
  completed: "green",
  failed: "red",
  skipped: "slate",
} as const;
const TYPE_LABEL = { s3: "S3", azure: "Azure Blob", sftp: "SFTP" } as const;

function duration(startedAt: string | null, finishedAt: string | null): string {
  if (!startedAt || !finishedAt) return "—";
  const seconds = Math.max(0, (Date.parse(finishedAt) - Date.parse(startedAt)) / 1000);
  return seconds < 60 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds / 60)} min`;
}

export default async function ExportsPage() {
  const buyer = await requireBuyer("/exports");
  const [destinations, orders] = await Promise.all([listDestinations(buyer.id), orderChoices(buyer.id)]);
  const runs = await Promise.all(destinations.map((destination) => destinationRuns(buyer.id, destination.id)));
  const delivered = orders.filter((order) => order.status === "delivered");
  const orderName = new Map(orders.map((order) => [order.id, order.name]));
  return (
    <div className="space-y-6">
      <header className="flex flex-wrap items-end justify-between gap-4">
        <div className="space-y-2">
          <h1 id="exports-heading" tabIndex={-1} className="text-2xl font-bold tracking-tight focus:outline-none">
            Exports
          </h1>
          <p className="max-w-2xl text-slate-600">
            Have every delivered order, and every new version of its tables, copied into your own S3 bucket, Azure
            container or SFTP directory. Each file is checked by its SHA-256, files already there are skipped, and{" "}
            <code>_manifest.json</code> is written last so your pipeline can wait for it. Failed copies are retried for
            over 24 hours. Runs are also in the API (<code>GET /api/v1/exports</code>) and can be sent as{" "}
            <Link href="/webhooks" className={linkClass}>
              webhook events
            </Link>
            .
          </p>
        </div>
        <DestinationForm orders={orders} defaultTemplate={DEFAULT_KEY_TEMPLATE} />
      </header>
      {destinations.length === 0 && (
        <p
          className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600"
          data-testid="no-destinations"
        >
          No destinations yet. Add one to have your orders copied into your own storage.
        </p>
      )}
      {destinations.map((destination, index) => (
        <section
          key={destination.id}
          aria-label={`Destination ${destination.name}`}
          className="space-y-4 rounded-lg border border-slate-200 bg-white p-4 sm:p-5"
          data-testid="export-destination"
        >
          <div className="space-y-1">
            <div className="flex flex-wrap items-center gap-2">
              <h2 className="font-semibold break-all">{destination.name}</h2>
              <Badge tone="slate">{TYPE_LABEL[destination.type]}</Badge>
              <Badge tone={destination.enabled ? "green" : "slate"}>{destination.enabled ? "Active" : "Paused"}</Badge>
            </div>
            <p className="font-mono text-sm break-all text-slate-600">{destination.place}</p>
            <p className="text-sm break-words text-slate-600">
              {destination.allOrders ? "All orders" : `${destination.orderIds.length} chosen orders`} ·{" "}
              {destination.format === "original" ? "original files" : `as ${destination.format}`} · keys{" "}
              <code className="break-all">{destination.keyTemplate}</code>
              {destination.approval === "on_warning" && " · versions with quality warnings wait for your approval"} ·
              added {formatDate(destination.createdAt)}
            </p>
            {destination.pausedReason && <p className="text-sm text-red-800">{destination.pausedReason}</p>}
            {destination.enabled && destination.failingSince && (
              <p className="text-sm text-amber-800">
                Failing since {formatDate(destination.failingSince)}: it is paused after 3 days without a success.
              </p>
            )}
          </div>
          <DestinationActions
            destinationId={destination.id}
            name={destination.name}
            enabled={destination.enabled}
            deliveredOrders={delivered}
          >
            <DestinationForm
              orders={orders}
              defaultTemplate={DEFAULT_KEY_TEMPLATE}
              initial={{
                id: destination.id,
                name: destination.name,
                type: destination.type,
                config: destination.config,
                allOrders: destination.allOrders,
                orderIds: destination.orderIds,
                format: destination.format,
                keyTemplate: destination.keyTemplate,
                approval: destination.approval,
              }}
            />
          </DestinationActions>
          <RunList runs={runs[index]!} orderName={orderName} />
        </section>
      ))}
    </div>
  );
}

function RunList({
  runs,
  orderName,
}: {
  runs: Awaited<ReturnType<typeof destinationRuns>>;
  orderName: Map<string, string>;
}) {
  if (runs.length === 0) return <p className="text-sm text-slate-600">No runs yet.</p>;
  return (
    <div className="space-y-2">
      <h3 className="text-sm font-semibold">Latest runs</h3>
      <ul className="divide-y divide-slate-100 rounded-md border border-slate-200 text-sm">
        {runs.map((run) => (
          <li key={run.id} className="space-y-1 p-3" data-testid="export-run" data-state={run.state}>
            <div className="flex flex-wrap items-center gap-2">
              <Badge tone={STATE_TONE[run.state]}>{run.state}</Badge>
              <code>{run.trigger}</code>
              <span className="break-all">{orderName.get(run.order_id) ?? run.order_id}</span>
              <span className="text-slate-600">{formatDate(run.createdAt)}</span>
            </div>
            <p className="text-slate-700">
              {run.files} {run.files === 1 ? "file" : "files"} ({run.skipped} already there) · {formatBytes(run.bytes)}{" "}
              · {duration(run.started_at, run.finished_at)}
              {run.manifest_key && (
                <>
                  {" "}
                  · manifest <code className="break-all">{run.manifest_key}</code>
                </>
              )}
            </p>
            {run.state === "awaiting_approval" && (
              <>
                <p className="text-amber-900" data-testid="awaiting-approval">
                  Version {run.tableVersion} of table <code>{run.tableName}</code> did not pass every quality check (see
                  the order&apos;s page). Approve to export it, or skip it.
                </p>
                <RunApproval runId={run.id} what={`${run.tableName} version ${run.tableVersion}`} />
              </>
            )}
            {run.error && (
              <p className="break-words text-red-800" data-testid="export-run-error">
                {run.error}
                {run.state === "pending" && run.nextAttemptAt && ` Next attempt ${formatDate(run.nextAttemptAt)}.`}
              </p>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
