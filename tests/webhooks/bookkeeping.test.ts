import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue } from "../../lib/queue";
import { setOrderStatus } from "../../lib/operator/orders";
import { deliverMessage, MAX_ATTEMPTS, requeueStrandedMessages } from "../../lib/webhooks/deliver";
import { createEndpoint, resendMessage } from "../../lib/webhooks/endpoints";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { startReceiver, type Answer } from "./receiver";

/**
 * The delivery's bookkeeping against a hostile receiver and its own failures: whatever a receiver
 * answers and whatever fails after the POST, a message gets at most MAX_ATTEMPTS POSTs, ends
 * delivered or failed, and has exactly one chain of jobs.
 */

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("webhook_books");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  process.env.WEBHOOK_ALLOW_PRIVATE = "true";
  process.env.WEBHOOK_ALLOW_INSECURE = "true";
});
afterAll(async () => {
  await closeJobQueue();
  await env?.cleanup();
});

/** A receiver answering as told, a buyer's endpoint at it, and one pending order.delivered message. */
async function pendingMessage(label: string, answer: (index: number) => Answer) {
  const receiver = await startReceiver(answer);
  const account = await buyer(label);
  const { id: endpointId } = await createEndpoint({
    buyerId: account.id,
    url: receiver.url,
    events: ["order.delivered"],
  });
  const pending = await order(account.id, { status: "unfinished" });
  await setOrderStatus(pending.id, "delivered");
  const message = await db().webhookMessage.findFirstOrThrow({ where: { endpointId } });
  return { receiver, account, endpointId, message };
}

const stored = (id: string) =>
  db().webhookMessage.findUniqueOrThrow({ where: { id }, include: { attemptsMade: true } });

/** Delivery jobs of a message that are queued, waiting to retry or running. */
async function liveJobs(messageId: string): Promise<number> {
  const [row] = await db().$queryRawUnsafe<{ count: number }[]>(
    `SELECT count(*)::int AS count FROM pgboss.job
     WHERE name = 'webhook-delivery' AND state < 'completed' AND data->>'messageId' = $1`,
    messageId,
  );
  return row!.count;
}

/** Marks a message's jobs done, as a worker that ran them would. */
const completeJobs = (messageId: string) =>
  db().$executeRawUnsafe(`UPDATE pgboss.job SET state = 'completed' WHERE data->>'messageId' = $1`, messageId);

describe("webhook bookkeeping", () => {
  it("stores a receiver's answer with NUL and control characters, and moves on along the schedule", async () => {
    const body = "bad\u0000answer\u0007\u001b[31m\ud800 end\nline two";
    const { receiver, message } = await pendingMessage("books-nul", () => ({ status: 500, body }));
    try {
      const outcome = await deliverMessage(message.id);
      expect(outcome).toMatchObject({ result: "retry", error: "answered 500" });
      const after = await stored(message.id);
      expect(after).toMatchObject({ status: "pending", attempts: 1 });
      expect(after.attemptsMade).toHaveLength(1);
      expect(after.attemptsMade[0]!.responseExcerpt).toBe("bad\ufffdanswer\ufffd\ufffd[31m\ufffd end\nline two");
      expect(after.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now());
    } finally {
      await receiver.close();
    }
  });

  it("counts an attempt whose record cannot be written, so a message gets at most MAX_ATTEMPTS POSTs", async () => {
    const { receiver, message } = await pendingMessage("books-broken", () => 500);
    // The attempts table refuses every row, as a full disk or a bug in the bookkeeping would.
    await db().$executeRawUnsafe(`CREATE FUNCTION refuse_attempt() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'attempts cannot be recorded'; END $$`);
    await db().$executeRawUnsafe(
      `CREATE TRIGGER refuse_attempt BEFORE INSERT ON webhook_attempts FOR EACH ROW EXECUTE FUNCTION refuse_attempt()`,
    );
    try {
      // Every job that could run for it, each at the message's next due time (or later): bounded.
      for (let run = 0; run < MAX_ATTEMPTS + 5; run++) {
        const { nextAttemptAt } = await stored(message.id);
        const at = new Date(Math.max(Date.now(), (nextAttemptAt ?? new Date()).getTime()) + 30_000 * run);
        await deliverMessage(message.id, { now: () => at });
      }
      expect(receiver.received).toHaveLength(MAX_ATTEMPTS);
      expect(await stored(message.id)).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS, attemptsMade: [] });
    } finally {
      await db().$executeRawUnsafe(`DROP TRIGGER refuse_attempt ON webhook_attempts`);
      await db().$executeRawUnsafe(`DROP FUNCTION refuse_attempt()`);
      await receiver.close();
    }
  });

  it("does nothing for a job that comes before the message's next attempt is due", async () => {
    const { receiver, message } = await pendingMessage("books-early", (index) => (index === 0 ? 500 : 200));
    try {
      const first = await deliverMessage(message.id);
      expect(first).toMatchObject({ result: "retry" });
      const early = await deliverMessage(message.id);
      expect(early).toMatchObject({ result: "skipped", reason: expect.stringMatching(/^not due until /) });
      expect(receiver.received).toHaveLength(1);
      expect(await stored(message.id)).toMatchObject({ status: "pending", attempts: 1 });
    } finally {
      await receiver.close();
    }
  });

  it("refuses to resend a pending message (no second chain of retries), and resends a failed one once", async () => {
    const { receiver, account, message } = await pendingMessage("books-resend", () => 500);
    try {
      // As the worker would run it: its first job done, the retry queued.
      await completeJobs(message.id);
      await deliverMessage(message.id);
      expect(await liveJobs(message.id)).toBe(1);
      await expect(resendMessage(account.id, message.id)).rejects.toMatchObject({
        code: "invalid_argument",
        message: expect.stringMatching(/still being delivered/),
      });
      expect(await stored(message.id)).toMatchObject({ status: "pending", attempts: 1 });
      expect(await liveJobs(message.id)).toBe(1);

      await db().webhookMessage.update({ where: { id: message.id }, data: { status: "failed" } });
      await completeJobs(message.id);
      const resends = await Promise.allSettled([1, 2, 3].map(() => resendMessage(account.id, message.id)));
      expect(resends.filter(({ status }) => status === "fulfilled")).toHaveLength(1);
      expect(await stored(message.id)).toMatchObject({ status: "pending", attempts: 0 });
      expect(await liveJobs(message.id)).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it("queues again a pending message whose job is gone, once", async () => {
    const { receiver, message } = await pendingMessage("books-stranded", () => 200);
    try {
      // Its job ran out of retries (the database was down for longer than they last).
      await db().$executeRawUnsafe(`UPDATE pgboss.job SET state = 'failed' WHERE data->>'messageId' = $1`, message.id);
      expect(await requeueStrandedMessages(new Date(Date.now() + 10_000))).toBe(0); // not a minute overdue yet
      const later = new Date(Date.now() + 120_000);
      expect(await requeueStrandedMessages(later)).toBeGreaterThanOrEqual(1);
      expect(await liveJobs(message.id)).toBe(1);
      await requeueStrandedMessages(later);
      expect(await liveJobs(message.id)).toBe(1);
      expect(await deliverMessage(message.id)).toEqual({ result: "delivered", status: 200 });
    } finally {
      await receiver.close();
    }
  });
});
