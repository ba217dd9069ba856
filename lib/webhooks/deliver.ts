import { Webhook } from "standardwebhooks";
import { db, sqlQuery, type Prisma } from "../db/client";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { errorFields, logger } from "../log";
import { openSecret } from "./secret";
import { postOnce, type AddressFilter, type PostResult } from "./ssrf";
import { storableText } from "../contract";

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

/** Every attempt a message gets: the first and one per retry delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

type Leased = {
  id: string;
  payload: string;
  /** Counting the attempt being made now. */
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
 * The attempt is counted when the lease is taken, before the POST: whatever happens after it (a
 * worker killed, bookkeeping that fails), a message gets at most MAX_ATTEMPTS POSTs. A job for a
 * message not due yet (a stray or duplicate job) does nothing: the message's own schedule holds.
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
    `UPDATE webhook_messages m SET lease_until = $2, attempts = m.attempts + 1
     FROM webhook_endpoints e
     WHERE m.id = $1 AND e.id = m.endpoint_id AND m.status = 'pending'
       AND (m.lease_until IS NULL OR m.lease_until <= $3)
       AND (m.next_attempt_at IS NULL OR m.next_attempt_at <= $3)
       AND m.attempts < $4
     RETURNING m.id, m.payload, m.attempts, e.id AS "endpointId", e.url, e.secret_sealed AS "secretSealed",
               e.enabled, e.failing_since AS "failingSince", e.buyer_id AS "buyerId"`,
    [messageId, new Date(startedAt.getTime() + LEASE_MS), startedAt, MAX_ATTEMPTS],
  );
  if (!message) return notAttempted(messageId, startedAt);
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
  const outcome = judge(answer, message.attempts, startedAt);
  const attempt = {
    messageId: message.id,
    attemptedAt: startedAt,
    statusCode: answer.ok ? answer.status : null,
    error: outcome.result === "delivered" ? null : storableText(outcome.error),
    durationMs: answer.durationMs,
    responseExcerpt: answer.ok ? storableText(answer.excerpt) : null,
  };
  try {
    await recordOutcome(message, outcome, now, attempt);
  } catch (error) {
    // The POST happened: the message moves on along its schedule even if its attempt's record cannot be kept.
    logger().error({ messageId: message.id, ...errorFields(error) }, "webhook attempt not recorded");
    await recordOutcome(message, outcome, now);
  }
  if (outcome.result !== "delivered") await noteEndpointFailure(message, startedAt);
  return outcome;
}

type Attempt = Prisma.WebhookAttemptUncheckedCreateInput;

/** What an answer means for a message on its `attempts`-th attempt. */
function judge(answer: PostResult, attempts: number, startedAt: Date): Exclude<DeliveryOutcome, { result: "skipped" }> {
  if (answer.ok && answer.status >= 200 && answer.status < 300) return { result: "delivered", status: answer.status };
  const error = !answer.ok
    ? answer.error
    : answer.status >= 300 && answer.status < 400
      ? `answered ${answer.status} (redirects are not followed)`
      : `answered ${answer.status}`;
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) return { result: "failed", error };
  return { result: "retry", nextAttemptAt: new Date(startedAt.getTime() + delay), error };
}

/**
 * The message's new state (and its next job, or its endpoint's recovery) in one transaction, with
 * the attempt's record when given.
 */
async function recordOutcome(
  message: Leased,
  outcome: Exclude<DeliveryOutcome, { result: "skipped" }>,
  now: () => Date,
  attempt?: Attempt,
): Promise<void> {
  await jobTransaction(async (tx) => {
    if (attempt) await tx.webhookAttempt.create({ data: attempt });
    if (outcome.result === "delivered") {
      await tx.webhookMessage.update({
        where: { id: message.id },
        data: { status: "delivered", deliveredAt: now(), nextAttemptAt: null, leaseUntil: null },
      });
      await tx.webhookEndpoint.update({ where: { id: message.endpointId }, data: { failingSince: null } });
    } else if (outcome.result === "failed") {
      await tx.webhookMessage.update({
        where: { id: message.id },
        data: { status: "failed", nextAttemptAt: null, leaseUntil: null },
      });
    } else {
      await tx.webhookMessage.update({
        where: { id: message.id },
        data: { nextAttemptAt: outcome.nextAttemptAt, leaseUntil: null },
      });
      await sendJob(QUEUES.webhookDelivery, { messageId: message.id }, { tx, startAfter: outcome.nextAttemptAt });
    }
  });
}

/**
 * Why a job found nothing to attempt. Another worker holding the message, or a next attempt not
 * due yet, each have a job of their own; a message whose attempts are all spent (its last one's
 * bookkeeping failed) is failed here.
 */
async function notAttempted(messageId: string, at: Date): Promise<DeliveryOutcome> {
  const message = await db().webhookMessage.findUnique({
    where: { id: messageId },
    select: { status: true, attempts: true, leaseUntil: true, nextAttemptAt: true },
  });
  if (!message) return { result: "skipped", reason: "no such message" };
  if (message.status !== "pending") return { result: "skipped", reason: `already ${message.status}` };
  if (message.leaseUntil && message.leaseUntil > at) return { result: "skipped", reason: "another worker holds it" };
  if (message.attempts >= MAX_ATTEMPTS) {
    await db().webhookMessage.updateMany({
      where: { id: messageId, status: "pending" },
      data: { status: "failed", nextAttemptAt: null, leaseUntil: null },
    });
    return { result: "failed", error: `all ${MAX_ATTEMPTS} attempts were made` };
  }
  return { result: "skipped", reason: `not due until ${message.nextAttemptAt?.toISOString()}` };
}

/** A pending message this far past its due time with no job is stranded (the sweep runs every minute). */
const STRANDED_AFTER_MS = 60_000;

/**
 * Queues a job for every pending message that has none alive (queued, waiting to retry or
 * running) though it was due a minute ago: its job ran out of pg-boss's retries (the database was
 * down for longer than they last), or fired early and stood down. Run by the worker every minute.
 * It reads pg-boss's job table (schema `pgboss`, version 10) because that is where "alive" is
 * known; a job queued twice is harmless, as a delivery first takes the message's lease.
 */
export async function requeueStrandedMessages(now = new Date(), batch = 1000): Promise<number> {
  const stranded = await sqlQuery<{ id: string }>(
    `SELECT m.id FROM webhook_messages m
     WHERE m.status = 'pending'
       AND coalesce(m.next_attempt_at, m.created_at) <= $1
       AND (m.lease_until IS NULL OR m.lease_until <= $2)
       AND NOT EXISTS (
         SELECT 1 FROM pgboss.job j
         WHERE j.name = $3 AND j.state < 'completed' AND j.data->>'messageId' = m.id
       )
     ORDER BY m.next_attempt_at
     LIMIT $4`,
    [new Date(now.getTime() - STRANDED_AFTER_MS), now, QUEUES.webhookDelivery, batch],
  );
  for (const { id } of stranded) await sendJob(QUEUES.webhookDelivery, { messageId: id });
  if (stranded.length > 0) logger().warn({ count: stranded.length }, "webhook messages with no job queued again");
  return stranded.length;
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
  await jobTransaction(async (tx) => {
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
