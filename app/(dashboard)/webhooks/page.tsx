import type { Metadata } from "next";
import Link from "next/link";
import { Badge, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { formatDate } from "@/lib/format";
import { WEBHOOKS_INTRO } from "@/lib/docs/page-intros";
import { listEndpoints, type EndpointMessageView } from "@/lib/webhooks/endpoints";
import { WEBHOOK_EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES } from "@/lib/webhooks/events";
import { insecureLoopbackAllowed, privateAddressesAllowed } from "@/lib/webhooks/ssrf";
import { AddEndpoint, EndpointActions, ResendButton } from "./endpoint-controls";

export const metadata: Metadata = { title: "Webhooks" };

const STATUS_TONE = { pending: "amber", delivered: "green", failed: "red" } as const;

export default async function WebhooksPage() {
  const buyer = await requireBuyer("/webhooks");
  const endpoints = await listEndpoints(buyer.id);
  const localReceivers = insecureLoopbackAllowed() && privateAddressesAllowed();
  return (
    <div className="space-y-6">
      <header className="flex flex-wrap items-end justify-between gap-4">
        <div className="space-y-2">
          <h1 id="webhooks-heading" tabIndex={-1} className="text-2xl font-bold tracking-tight focus:outline-none">
            Webhooks
          </h1>
          <p className="max-w-2xl text-slate-600">
            {WEBHOOKS_INTRO} Each message is signed per{" "}
            <a className={linkClass} href="https://www.standardwebhooks.com/">
              Standard Webhooks
            </a>{" "}
            and retried for over 24 hours until your endpoint answers 2xx. See the{" "}
            <Link href="/docs/api#webhooks" className={linkClass}>
              API reference
            </Link>{" "}
            for the bodies and how to verify them.
          </p>
          {localReceivers && (
            <p className="max-w-2xl text-sm text-slate-600" data-testid="local-receivers">
              This server also accepts receivers on its own machine and network, such as{" "}
              <code>http://127.0.0.1:4000/hooks</code>, to try webhooks while developing. In production only public{" "}
              <code>https://</code> receivers are accepted.
            </p>
          )}
        </div>
        <AddEndpoint
          localReceivers={localReceivers}
          events={WEBHOOK_EVENT_TYPES.filter((type) => type !== "webhook.test").map((type) => ({
            type,
            description: WEBHOOK_EVENT_DESCRIPTIONS[type],
          }))}
        />
      </header>
      {endpoints.length === 0 && (
        <p
          className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600"
          data-testid="no-endpoints"
        >
          No endpoints yet. Add one to be told when your orders change.
        </p>
      )}
      {endpoints.map((endpoint) => (
        <section
          key={endpoint.id}
          aria-label={`Endpoint ${endpoint.url}`}
          className="space-y-4 rounded-lg border border-slate-200 bg-white p-4 sm:p-5"
          data-testid="webhook-endpoint"
        >
          <div className="space-y-1">
            <div className="flex flex-wrap items-center gap-2">
              <h2 className="font-mono text-sm font-semibold break-all">{endpoint.url}</h2>
              <Badge tone={endpoint.enabled ? "green" : "slate"}>{endpoint.enabled ? "Enabled" : "Disabled"}</Badge>
            </div>
            <p className="text-sm text-slate-600">
              {endpoint.events.join(", ")} · secret <code>{endpoint.secretHint}</code> · added{" "}
              {formatDate(endpoint.createdAt)}
            </p>
            {endpoint.disabledReason && <p className="text-sm text-red-800">{endpoint.disabledReason}</p>}
            {endpoint.enabled && endpoint.failingSince && (
              <p className="text-sm text-amber-800">
                Failing since {formatDate(endpoint.failingSince)}: it is disabled after 3 days without a success.
              </p>
            )}
          </div>
          <EndpointActions endpointId={endpoint.id} url={endpoint.url} enabled={endpoint.enabled} />
          <MessageLog messages={endpoint.messages} />
        </section>
      ))}
    </div>
  );
}

function MessageLog({ messages }: { messages: EndpointMessageView[] }) {
  if (messages.length === 0) return <p className="text-sm text-slate-600">No messages yet.</p>;
  return (
    <div className="space-y-2">
      <h3 className="text-sm font-semibold">Latest messages</h3>
      <ul className="divide-y divide-slate-100 rounded-md border border-slate-200 text-sm">
        {messages.map((message) => (
          <li key={message.id} className="space-y-2 p-3" data-testid="webhook-message" data-status={message.status}>
            <div className="flex flex-wrap items-center gap-2">
              <code>{message.eventType}</code>
              <Badge tone={STATUS_TONE[message.status]}>{message.status}</Badge>
              <span className="font-mono text-xs break-all text-slate-500">{message.id}</span>
              <span className="text-slate-600">{formatDate(message.createdAt)}</span>
              {message.status === "pending" && message.nextAttemptAt && message.attempts.length > 0 && (
                <span className="text-slate-600">next attempt {formatDate(message.nextAttemptAt)}</span>
              )}
              {message.status !== "pending" && <ResendButton messageId={message.id} />}
            </div>
            {message.attempts.length > 0 && (
              <ol className="space-y-1 text-xs text-slate-700" aria-label="Attempts">
                {message.attempts.map((attempt, index) => (
                  <li key={index} data-testid="webhook-attempt" className="break-words">
                    {formatDate(attempt.attemptedAt)} · <strong>{attempt.statusCode ?? "no answer"}</strong>
                    {attempt.error && ` (${attempt.error})`} · {attempt.durationMs} ms
                    {attempt.responseExcerpt && (
                      <>
                        {" "}
                        · <span className="font-mono">{attempt.responseExcerpt.slice(0, 200)}</span>
                      </>
                    )}
                  </li>
                ))}
              </ol>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
