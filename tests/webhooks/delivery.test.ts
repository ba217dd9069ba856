import { spawn } from "node:child_process";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue, startWorker } from "../../lib/queue";
import { setOrderStatus } from "../../lib/operator/orders";
import { orderJson } from "../../lib/orders/queries";
import { deliverMessage, handleDeliveryJob, RETRY_DELAYS_MS } from "../../lib/webhooks/deliver";
import { createEndpoint, sendTestEvent } from "../../lib/webhooks/endpoints";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { startReceiver } from "./receiver";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("webhooks");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  // The receivers are plain HTTP on loopback.
  process.env.WEBHOOK_ALLOW_PRIVATE = "true";
  process.env.WEBHOOK_ALLOW_INSECURE = "true";
});
afterAll(async () => {
  await closeJobQueue();
  await env?.cleanup();
});

/** A buyer with an endpoint at `url` for every event, and an unfinished order to deliver. */
async function subscribed(label: string, url: string) {
  const account = await buyer(label);
  const { id, secret } = await createEndpoint({
    buyerId: account.id,
    url,
    events: ["order.delivered", "order.refunded", "key.expiring", "key.expired"],
  });
  const pending = await order(account.id, { name: `${label} order`, status: "unfinished" });
  return { account, endpointId: id, secret, order: pending };
}

const messagesOf = (endpointId: string) =>
  db().webhookMessage.findMany({
    where: { endpointId },
    include: { attemptsMade: { orderBy: { attemptedAt: "asc" } } },
  });

describe("webhook deliveries (a real receiver on loopback, the real PostgreSQL)", () => {
  it("announce a delivered order in the transaction of its status change, signed per Standard Webhooks", async () => {
    const receiver = await startReceiver();
    try {
      const { account, endpointId, secret, order: pending } = await subscribed("wh-signed", receiver.url);
      const at = new Date("2026-11-23T10:00:00.000Z");
      await setOrderStatus(pending.id, "delivered", at);
      const [message] = await messagesOf(endpointId);
      expect(message).toMatchObject({ eventType: "order.delivered", status: "pending" });

      expect(await deliverMessage(message!.id)).toEqual({ result: "delivered", status: 200 });
      const [request] = receiver.received;
      const verified = new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>);
      expect(verified).toEqual({
        type: "order.delivered",
        timestamp: at.toISOString(),
        data: JSON.parse(await orderJson(account.id, pending.id)),
      });
      expect(request!.headers["webhook-id"]).toBe(message!.id);
      // A tampered body does not verify.
      expect(() =>
        new Webhook(secret).verify(
          request!.body.replace("delivered", "refunded"),
          request!.headers as Record<string, string>,
        ),
      ).toThrow();
    } finally {
      await receiver.close();
    }
  });

  it("retry a receiver that fails twice with the same webhook-id until it takes the message", async () => {
    const receiver = await startReceiver((index) => (index < 2 ? 500 : 200));
    try {
      const { endpointId, order: pending } = await subscribed("wh-retry", receiver.url);
      await setOrderStatus(pending.id, "delivered");
      const [message] = await messagesOf(endpointId);
      const t0 = message!.nextAttemptAt!;
      const first = await deliverMessage(message!.id, { now: () => t0 });
      expect(first).toEqual({ result: "retry", nextAttemptAt: new Date(t0.getTime() + 5_000), error: "answered 500" });
      const t1 = new Date(t0.getTime() + 5_000);
      const second = await deliverMessage(message!.id, { now: () => t1 });
      expect(second).toMatchObject({ result: "retry", nextAttemptAt: new Date(t1.getTime() + 300_000) });
      expect(await deliverMessage(message!.id, { now: () => new Date(t1.getTime() + 300_000) })).toEqual({
        result: "delivered",
        status: 200,
      });
      expect(new Set(receiver.received.map(({ headers }) => headers["webhook-id"]))).toEqual(new Set([message!.id]));
      expect(receiver.received).toHaveLength(3);
      const [stored] = await messagesOf(endpointId);
      expect(stored!.status).toBe("delivered");
      expect(stored!.attemptsMade.map(({ statusCode }) => statusCode)).toEqual([500, 500, 200]);
      // Delivered: a stray job for it does nothing.
      expect(await deliverMessage(message!.id)).toEqual({ result: "skipped", reason: "already delivered" });
    } finally {
      await receiver.close();
    }
  });

  it("retry a receiver that never answers on the schedule, then fail the message (injected clock, no sleeping)", async () => {
    const receiver = await startReceiver(() => "hang");
    try {
      const { account, endpointId, order: pending } = await subscribed("wh-hang", receiver.url);
      await setOrderStatus(pending.id, "delivered");
      const [message] = await messagesOf(endpointId);
      const firstAttempt = message!.nextAttemptAt!.getTime();
      let clock = firstAttempt;
      const scheduled: number[] = [];
      for (let attempt = 0; attempt <= RETRY_DELAYS_MS.length; attempt++) {
        const outcome = await deliverMessage(message!.id, { now: () => new Date(clock), timeoutMs: 100 });
        if (attempt < RETRY_DELAYS_MS.length) {
          expect(outcome).toMatchObject({ result: "retry", error: "no answer within 100 ms" });
          const next = (outcome as { nextAttemptAt: Date }).nextAttemptAt.getTime();
          scheduled.push(next - clock);
          clock = next;
        } else {
          expect(outcome).toEqual({ result: "failed", error: "no answer within 100 ms" });
        }
      }
      expect(scheduled).toEqual(RETRY_DELAYS_MS);
      expect(RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0)).toBeGreaterThanOrEqual(24 * 3_600_000);
      const [stored] = await messagesOf(endpointId);
      expect(stored!.status).toBe("failed");
      expect(stored!.attemptsMade).toHaveLength(RETRY_DELAYS_MS.length + 1);
      // The endpoint has been failing for about 27.6 hours: not yet disabled (that takes 3 days).
      const endpoint = await db().webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId } });
      expect(endpoint.enabled).toBe(true);
      expect(endpoint.failingSince).toEqual(new Date(firstAttempt));

      // Three days after the first failure, the next failure disables it.
      await sendTestEvent(account.id, endpointId);
      const test = (await messagesOf(endpointId)).find(({ eventType }) => eventType === "webhook.test")!;
      const threeDaysLater = new Date(firstAttempt + 3 * 24 * 3_600_000 + 1000);
      await deliverMessage(test.id, { now: () => threeDaysLater, timeoutMs: 100 });
      const disabled = await db().webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId } });
      expect(disabled.enabled).toBe(false);
      expect(disabled.disabledReason).toMatch(/every delivery failed for 3 days/);
      // The buyer is told by e-mail (a job of the mail queue, sent by the worker's mail handler).
      const mails = await db().$queryRawUnsafe<{ data: { to: string; subject: string } }[]>(
        `SELECT data FROM pgboss.job WHERE name = 'mail'`,
      );
      expect(mails.map(({ data }) => data)).toContainEqual(
        expect.objectContaining({ to: account.email, subject: "A webhook endpoint was disabled" }),
      );
    } finally {
      await receiver.close();
    }
  });

  it("are made once each by two workers sharing the queue", async () => {
    const receiver = await startReceiver();
    const stops = await Promise.all(
      [1, 2].map(() => startWorker({ handlers: { "webhook-delivery": handleDeliveryJob }, concurrency: 4 })),
    );
    try {
      const { endpointId, account } = await subscribed("wh-two-workers", receiver.url);
      const orders = await Promise.all(
        Array.from({ length: 30 }, (_, i) => order(account.id, { name: `o${i}`, status: "unfinished" })),
      );
      for (const each of orders) await setOrderStatus(each.id, "delivered");
      await waitFor(() => receiver.received.length >= 30, 30_000, "30 deliveries");
      await new Promise((resolve) => setTimeout(resolve, 1500)); // any duplicate would arrive now
      const ids = receiver.received.map(({ headers }) => headers["webhook-id"]);
      expect(ids).toHaveLength(30);
      expect(new Set(ids).size).toBe(30);
      const messages = await messagesOf(endpointId);
      expect(messages.every(({ status }) => status === "delivered")).toBe(true);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
      await receiver.close();
    }
  });

  it(
    "survive a worker killed mid-delivery: the message is retried by another and delivered",
    { timeout: 150_000 },
    async () => {
      let killed = false;
      const receiver = await startReceiver((index) => (index === 0 ? "hang" : 200));
      const { endpointId, order: pending } = await subscribed("wh-killed", receiver.url);
      const child = spawn(process.execPath, [path.resolve("scripts/built.mjs"), "worker"], {
        env: { ...process.env, KEY_LIFECYCLE_CRON: "0 0 1 1 *" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout?.on("data", (chunk) => (output += chunk));
      child.stderr?.on("data", (chunk) => (output += chunk));
      let stop: (() => Promise<void>) | undefined;
      try {
        await waitFor(() => output.includes("Job worker started"), 30_000, `the worker to start:\n${output}`);
        await setOrderStatus(pending.id, "delivered");
        await waitFor(() => receiver.received.length === 1, 20_000, "the first attempt");
        child.kill("SIGKILL");
        killed = true;
        // Another worker takes over: the lost job expires (30 s) and pg-boss retries it.
        stop = await startWorker({
          handlers: { "webhook-delivery": handleDeliveryJob },
          maintenanceIntervalSeconds: 5,
        });
        await waitFor(() => receiver.received.length >= 2, 120_000, "the retried delivery");
        await waitFor(async () => (await messagesOf(endpointId))[0]?.status === "delivered", 10_000, "delivered");
        expect(new Set(receiver.received.map(({ headers }) => headers["webhook-id"])).size).toBe(1);
      } finally {
        if (!killed) child.kill("SIGKILL");
        await stop?.();
        await receiver.close();
      }
    },
  );
});
