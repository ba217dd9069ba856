import ipaddr from "ipaddr.js";
import { z } from "zod";
import { CONTROL_CHARACTERS } from "../contract";
import { db } from "../db/client";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { emitEvent } from "./emit";
import { WEBHOOK_EVENT_TYPES, webhookEventTypeSchema, type WebhookEventType } from "./events";
import { generateWebhookSecret, sealSecret, secretHint } from "./secret";
import { configuredAddressFilter, insecureLoopbackAllowed, privateAddressesAllowed } from "./ssrf";

/** A buyer's webhook endpoints: what the dashboard's Webhooks page does. Every query is scoped to the buyer. */

export const MAX_ENDPOINTS_PER_ACCOUNT = 10;
const isLoopbackHost = (hostname: string) => {
  const literal = hostname.replace(/^\[|\]$/g, "");
  return hostname === "localhost" || (ipaddr.isValid(literal) && ipaddr.process(literal).range() === "loopback");
};

/**
 * An endpoint URL: HTTPS (plain HTTP only to a loopback host, see insecureLoopbackAllowed),
 * no user name or password in it, and not a private address written out (names are checked on
 * every delivery, on the address they resolve to).
 */
export const endpointUrlSchema = z
  .string()
  .trim()
  .min(1, "Enter the URL that should receive the events.")
  .max(2000, "The URL is too long (2,000 characters at most).")
  .superRefine((value, context) => {
    const problem = urlProblem(value);
    if (problem) context.addIssue({ code: "custom", message: problem });
  });

function urlProblem(value: string): string | undefined {
  let url: URL;
  try {
    if (CONTROL_CHARACTERS.test(value)) throw new TypeError("control characters");
    url = new URL(value);
  } catch {
    return "That is not a URL: it should look like https://example.com/webhooks.";
  }
  if (url.username || url.password) return "Leave the user name and password out of the URL.";
  const insecureAllowed = insecureLoopbackAllowed() && isLoopbackHost(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && insecureAllowed)) {
    return "Use an https:// URL: events carry your order data.";
  }
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (
    (!privateAddressesAllowed() && url.hostname === "localhost") ||
    (ipaddr.isValid(literal) && configuredAddressFilter()(literal))
  ) {
    return "That address is private, local or reserved: events can only be sent to a public address.";
  }
  return undefined;
}

export const endpointEventsSchema = z
  .array(webhookEventTypeSchema)
  .min(1, "Choose at least one event.")
  .transform((events) => [...new Set(events)]);

export type EndpointAttemptView = {
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseExcerpt: string | null;
};
export type EndpointMessageView = {
  id: string;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  createdAt: Date;
  nextAttemptAt: Date | null;
  attempts: EndpointAttemptView[];
};
export type EndpointView = {
  id: string;
  url: string;
  events: WebhookEventType[];
  secretHint: string;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: Date | null;
  createdAt: Date;
  messages: EndpointMessageView[];
};

/** The buyer's endpoints, oldest first, each with its latest messages and their attempts. */
export async function listEndpoints(buyerId: string, messagesPerEndpoint = 20): Promise<EndpointView[]> {
  const endpoints = await db().webhookEndpoint.findMany({
    where: { buyerId },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: {
      id: true,
      url: true,
      events: true,
      secretHint: true,
      enabled: true,
      disabledReason: true,
      failingSince: true,
      createdAt: true,
      messages: {
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        take: messagesPerEndpoint,
        select: {
          id: true,
          eventType: true,
          status: true,
          createdAt: true,
          nextAttemptAt: true,
          attemptsMade: {
            orderBy: { attemptedAt: "asc" },
            select: { attemptedAt: true, statusCode: true, error: true, durationMs: true, responseExcerpt: true },
          },
        },
      },
    },
  });
  return endpoints.map(({ messages, events, ...endpoint }) => ({
    ...endpoint,
    events: events.filter((event): event is WebhookEventType =>
      (WEBHOOK_EVENT_TYPES as readonly string[]).includes(event),
    ),
    messages: messages.map(({ attemptsMade, ...message }) => ({ ...message, attempts: attemptsMade })),
  }));
}

/** Adds an endpoint; its signing secret is returned here and never again. */
export async function createEndpoint(input: {
  buyerId: string;
  url: string;
  events: WebhookEventType[];
}): Promise<{ id: string; secret: string }> {
  const count = await db().webhookEndpoint.count({ where: { buyerId: input.buyerId } });
  if (count >= MAX_ENDPOINTS_PER_ACCOUNT) {
    throw new AppError("invalid_argument", `An account has at most ${MAX_ENDPOINTS_PER_ACCOUNT} endpoints.`);
  }
  const secret = generateWebhookSecret();
  const endpoint = await db().webhookEndpoint.create({
    data: {
      buyerId: input.buyerId,
      url: endpointUrlSchema.parse(input.url),
      events: endpointEventsSchema.parse(input.events),
      secretSealed: sealSecret(secret),
      secretHint: secretHint(secret),
    },
    select: { id: true },
  });
  return { id: endpoint.id, secret };
}

async function ownEndpoint(buyerId: string, endpointId: string): Promise<{ id: string; url: string }> {
  const endpoint = isTypedId("whe", endpointId)
    ? await db().webhookEndpoint.findFirst({ where: { id: endpointId, buyerId }, select: { id: true, url: true } })
    : null;
  if (!endpoint) throw new AppError("not_found", `No webhook endpoint ${endpointId} for this account.`);
  return endpoint;
}

/** Enables or disables an endpoint. Enabling clears the failure record; pending messages of a disabled one fail. */
export async function setEndpointEnabled(buyerId: string, endpointId: string, enabled: boolean) {
  const endpoint = await ownEndpoint(buyerId, endpointId);
  await db().webhookEndpoint.update({
    where: { id: endpoint.id },
    data: enabled
      ? { enabled, disabledReason: null, failingSince: null }
      : { enabled, disabledReason: "Disabled by you." },
  });
  return endpoint;
}

/** A new signing secret, returned here only; deliveries from now on are signed with it. */
export async function rotateEndpointSecret(
  buyerId: string,
  endpointId: string,
): Promise<{ url: string; secret: string }> {
  const endpoint = await ownEndpoint(buyerId, endpointId);
  const secret = generateWebhookSecret();
  await db().webhookEndpoint.update({
    where: { id: endpoint.id },
    data: { secretSealed: sealSecret(secret), secretHint: secretHint(secret) },
  });
  return { url: endpoint.url, secret };
}

/** Deletes an endpoint with its messages and attempts. */
export async function deleteEndpoint(buyerId: string, endpointId: string) {
  const endpoint = await ownEndpoint(buyerId, endpointId);
  await db().webhookEndpoint.delete({ where: { id: endpoint.id } });
  return endpoint;
}

/** Sends a `webhook.test` event to this endpoint only (enabled or not would be refused: it must be enabled). */
export async function sendTestEvent(buyerId: string, endpointId: string, at = new Date()): Promise<string> {
  const endpoint = await ownEndpoint(buyerId, endpointId);
  const [messageId] = await jobTransaction((tx) =>
    emitEvent(tx, {
      buyerId,
      type: "webhook.test",
      data: { endpoint_id: endpoint.id, message: "A test event from Dataset Access." },
      at,
      endpointId: endpoint.id,
    }),
  );
  if (!messageId) throw new AppError("invalid_argument", "This endpoint is disabled: enable it to send a test event.");
  return messageId;
}

/**
 * Sends a delivered or failed message again, with the same `webhook-id` (receivers deduplicate on
 * it): it becomes pending with a fresh schedule and is delivered now. A pending message is refused
 * (its own retries are under way; a second chain would exceed the contract's attempts), checked
 * in the update itself so two resends at once make one.
 */
export async function resendMessage(buyerId: string, messageId: string, at = new Date()): Promise<void> {
  const message = isTypedId("msg", messageId)
    ? await db().webhookMessage.findFirst({
        where: { id: messageId, endpoint: { buyerId } },
        select: { id: true, endpoint: { select: { enabled: true } } },
      })
    : null;
  if (!message) throw new AppError("not_found", `No webhook message ${messageId} for this account.`);
  if (!message.endpoint.enabled) throw new AppError("invalid_argument", "Enable the endpoint before resending to it.");
  await jobTransaction(async (tx) => {
    const { count } = await tx.webhookMessage.updateMany({
      where: { id: message.id, status: { not: "pending" } },
      data: { status: "pending", attempts: 0, nextAttemptAt: at, leaseUntil: null, deliveredAt: null },
    });
    if (count === 0) {
      throw new AppError(
        "invalid_argument",
        "This message is still being delivered: its retries are under way. Resend it once it is delivered or failed.",
      );
    }
    await sendJob(QUEUES.webhookDelivery, { messageId: message.id }, { tx });
  });
}
