import { z } from "zod";

/** The events an endpoint can subscribe to (the contract's "Part 2: Webhooks"). */
export const WEBHOOK_EVENT_TYPES = [
  "order.delivered",
  "order.refunded",
  "table.updated",
  "table.notice",
  "key.expiring",
  "key.expired",
  "export.completed",
  "export.failed",
  "webhook.test",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const WEBHOOK_EVENT_DESCRIPTIONS: Record<WebhookEventType, string> = {
  "order.delivered": "An order's files are ready to download.",
  "order.refunded": "An order was refunded; its files can no longer be downloaded.",
  "table.updated":
    "A table of an order has a new version (data: the Version, with order_id, table and the table's freshness).",
  "table.notice":
    "The operator posted a notice about a table: a schema change, a delay or a deprecation (data: the Notice, with order_id and table).",
  "key.expiring": "An API key expires in 7 days, and again 1 day before.",
  "key.expired": "An API key has expired.",
  "export.completed": "An export run copied its files to one of your destinations (Exports).",
  "export.failed": "An export run gave up after its retries (over 24 hours); the error says why.",
  "webhook.test": "Sent when you press “Send test event” (always delivered to that endpoint).",
};

/** The events an endpoint can choose, by what they are about: the Webhooks page's intro names each group. */
export const WEBHOOK_EVENT_GROUPS: readonly { when: string; events: readonly WebhookEventType[] }[] = [
  { when: "an order is delivered or refunded", events: ["order.delivered", "order.refunded"] },
  { when: "a table gets a new version", events: ["table.updated"] },
  { when: "a notice about a table is posted", events: ["table.notice"] },
  { when: "an API key is about to expire or has expired", events: ["key.expiring", "key.expired"] },
  { when: "an export run completes or fails", events: ["export.completed", "export.failed"] },
];

export const webhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES, {
  error: `Events are ${WEBHOOK_EVENT_TYPES.join(", ")}.`,
});

/** The body of every message: `{type, timestamp, data}`, serialised once and signed as sent. */
export function eventBody(type: WebhookEventType, data: unknown, at: Date): string {
  return JSON.stringify({ type, timestamp: at.toISOString(), data });
}

/** A key event's `data`. */
export type KeyEventData = { id: string; name: string; permission: string; expires_at: string };
