import { Webhook } from "standardwebhooks";
import { db, sqlQuery } from "../db/client";
import { QUEUES, sendJob } from "../jobs";
import { errorFields, logger } from "../log";
import { openSecret } from "./secret";
import { postOnce, type AddressFilter } from "./ssrf";

/**
 * Delays before the 2nd, 3rd, ... attempt of a message (the contract's example schedule): 8
 * attempts over about 27.6 hours, then the message is failed.
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/** An endpoint whose deliveries have failed without a success for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 60 * 60 * 1000;
export const DELIVERY_TIMEOUT_MS = 15_000;
/** A delivery holds its message this long: the timeout and a margin, less than the job's expiry. */
const LEASE_MS = DELIVERY_TIMEOUT_MS + 10_000;

export type DeliveryOutcome =
  | { result: "delivered"; status: number }
  | { result: "retry"; nextAttemptAt: Date; error: string }
  | { result: "failed"; error: string }
  | { result: "skipped"; reason: string };

type Leased = {
  id: string;
  payload: string;
  attempts: number;
  endpointId: string;
  url: string;
  secretSealed: string;
  enabled: boolean;
  failingSince: Date | null;
  buyerId: string;
};

/**
 * One delivery attempt of a message, by whichever worker holds its lease: signed per Standard
 * Webhooks with the same `webhook-id` (the message id) on every attempt; a 2xx within the timeout
 * delivers it; anything else schedules the next attempt (a new job) or, after the last, fails it.
 * `now` is injectable so the schedule is tested without waiting.
 */
export async function deliverMessage(
  messageId: string,
  {
    now = () => new Date(),
    timeoutMs = deliveryTimeoutMs(),
    isForbidden,
  }: { now?: () => Date; timeoutMs?: number; isForbidden?: AddressFilter } = {},
): Promise<DeliveryOutcome> {
  const startedAt = now();
  const [message] = await sqlQuery<Leased>(
    `UPDATE webhook_messages m SET lease_until = $2
     FROM webhook_endpoints e
     WHERE m.id = $1 AND e.id = m.endpoint_id AND m.status = 'pending'
       AND (m.lease_until IS NULL OR m.lease_until <= $3)
     RETURNING m.id, m.payload, m.attempts, e.id AS "endpointId", e.url, e.secret_sealed AS "secretSealed",
               e.enabled, e.failing_since AS "failingSince", e.buyer_id AS "buyerId"`,
    [messageId, new Date(startedAt.getTime() + LEASE_MS), startedAt],
  );
  if (!message) return skipped(messageId, startedAt);
  if (!message.enabled) {
    await db().webhookMessage.update({ where: { id: message.id }, data: { status: "failed", leaseUntil: null } });
    return { result: "failed", error: "the endpoint is disabled" };
  }

  const timestamp = new Date(Math.floor(startedAt.getTime() / 1000) * 1000);
  const signature = new Webhook(openSecret(message.secretSealed)).sign(message.id, timestamp, message.payload);
  const answer = await postOnce(
    message.url,
    message.payload,
    {
      "webhook-id": message.id,
      "webhook-timestamp": String(timestamp.getTime() / 1000),
      "webhook-signature": signature,
      "user-agent": "DatasetAccess-Webhooks/1",
    },
    { timeoutMs, isForbidden },
  );
  const attempts = message.attempts + 1;
  const succeeded = answer.ok && answer.status >= 200 && answer.status < 300;
  const error = answer.ok
    ? succeeded
      ? undefined
      : answer.status >= 300 && answer.status < 400
        ? `answered ${answer.status} (redirects are not followed)`
        : `answered ${answer.status}`
    : answer.error;
  await db().webhookAttempt.create({
    data: {
      messageId: message.id,
      attemptedAt: startedAt,
      statusCode: answer.ok ? answer.status : null,
      error: error ?? null,
      durationMs: answer.durationMs,
      responseExcerpt: answer.ok ? answer.excerpt : null,
    },
  });

  if (succeeded) {
    await db().$transaction([
      db().webhookMessage.update({
        where: { id: message.id },
        data: { status: "delivered", attempts, deliveredAt: now(), nextAttemptAt: null, leaseUntil: null },
      }),
      db().webhookEndpoint.update({ where: { id: message.endpointId }, data: { failingSince: null } }),
    ]);
    return { result: "delivered", status: answer.ok ? answer.status : 0 };
  }

  await noteEndpointFailure(message, startedAt);
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) {
    await db().webhookMessage.update({
      where: { id: message.id },
      data: { status: "failed", attempts, nextAttemptAt: null, leaseUntil: null },
    });
    return { result: "failed", error: error! };
  }
  const nextAttemptAt = new Date(startedAt.getTime() + delay);
  await db().$transaction(async (tx) => {
    await tx.webhookMessage.update({
      where: { id: message.id },
      data: { attempts, nextAttemptAt, leaseUntil: null },
    });
    await sendJob(QUEUES.webhookDelivery, { messageId: message.id }, { tx, startAfter: nextAttemptAt });
  });
  return { result: "retry", nextAttemptAt, error: error! };
}

/** Not delivered now: already done, or another worker holds it (then it is tried again after its lease). */
async function skipped(messageId: string, at: Date): Promise<DeliveryOutcome> {
  const message = await db().webhookMessage.findUnique({
    where: { id: messageId },
    select: { status: true, leaseUntil: true },
  });
  if (message?.status === "pending" && message.leaseUntil && message.leaseUntil > at) {
    await sendJob(QUEUES.webhookDelivery, { messageId }, { startAfter: message.leaseUntil });
    return { result: "skipped", reason: "another worker holds it" };
  }
  return { result: "skipped", reason: message ? `already ${message.status}` : "no such message" };
}

/** Marks the endpoint failing; after 3 days of it, disables it and tells the buyer (once). */
async function noteEndpointFailure(message: Leased, at: Date): Promise<void> {
  const failingSince = message.failingSince ?? at;
  if (!message.failingSince) {
    await db().webhookEndpoint.updateMany({
      where: { id: message.endpointId, failingSince: null },
      data: { failingSince: at },
    });
  }
  if (at.getTime() - failingSince.getTime() < DISABLE_AFTER_FAILING_MS) return;
  const reason = `Disabled on ${at.toISOString()}: every delivery failed for 3 days.`;
  await db().$transaction(async (tx) => {
    const { count } = await tx.webhookEndpoint.updateMany({
      where: { id: message.endpointId, enabled: true },
      data: { enabled: false, disabledReason: reason },
    });
    if (count === 0) return;
    const buyer = await tx.user.findUniqueOrThrow({ where: { id: message.buyerId }, select: { email: true } });
    await sendJob(
      QUEUES.mail,
      {
        to: buyer.email,
        subject: "A webhook endpoint was disabled",
        text: `Deliveries to ${message.url} have failed for 3 days, so the endpoint was disabled.\n\nFix the receiver, then enable it again on the Webhooks page and resend the messages you need.`,
      },
      { tx },
    );
  });
  logger().warn({ endpointId: message.endpointId }, "webhook endpoint disabled after 3 days of failures");
}

function deliveryTimeoutMs(): number {
  const configured = Number(process.env.WEBHOOK_TIMEOUT_MS);
  return Number.isFinite(configured) && configured > 0 ? configured : DELIVERY_TIMEOUT_MS;
}

/** The worker's handler of the delivery queue. */
export async function handleDeliveryJob(data: Record<string, unknown>): Promise<void> {
  if (typeof data.messageId !== "string") return;
  const outcome = await deliverMessage(data.messageId).catch((error: unknown) => {
    logger().error({ messageId: data.messageId, ...errorFields(error) }, "webhook delivery failed to run");
    throw error; // pg-boss retries the job
  });
  logger().info({ messageId: data.messageId, ...outcome }, "webhook delivery");
}
