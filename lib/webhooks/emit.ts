import type { Prisma } from "../db/client";
import { QUEUES, sendJob } from "../queue";
import { eventBody, type WebhookEventType } from "./events";

/**
 * Records an event for every enabled endpoint of the buyer subscribed to it (or for `endpointId`
 * only) and queues its delivery, inside `tx`: the change that causes the event commits with its
 * messages and their jobs, or none of them does. Returns the messages' ids.
 */
export async function emitEvent(
  tx: Prisma.TransactionClient,
  input: { buyerId: string; type: WebhookEventType; data: unknown; at: Date; endpointId?: string },
): Promise<string[]> {
  const endpoints = await tx.webhookEndpoint.findMany({
    where: {
      buyerId: input.buyerId,
      enabled: true,
      ...(input.endpointId ? { id: input.endpointId } : { events: { has: input.type } }),
    },
    select: { id: true },
  });
  const payload = eventBody(input.type, input.data, input.at);
  const ids: string[] = [];
  for (const endpoint of endpoints) {
    const message = await tx.webhookMessage.create({
      data: { endpointId: endpoint.id, eventType: input.type, payload, nextAttemptAt: input.at, createdAt: input.at },
      select: { id: true },
    });
    await sendJob(QUEUES.webhookDelivery, { messageId: message.id }, { tx });
    ids.push(message.id);
  }
  return ids;
}
