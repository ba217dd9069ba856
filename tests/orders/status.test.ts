import { afterAll, beforeAll, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue, jobQueue } from "../../lib/queue";
import { createOrder, setOrderStatus } from "../../lib/operator/orders";
import { createTestEnvironment, lockTable } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("order_status");
});
afterAll(async () => {
  await closeJobQueue();
  await env?.cleanup();
});

const dates = (id: string) =>
  db().order.findUniqueOrThrow({ where: { id }, select: { deliveredAt: true, refundedAt: true } });

it("records when an order was refunded, keeps it on a second refund, and clears it when the order leaves that status", async () => {
  const account = await buyer("refund-dates");
  const { id } = await createOrder({ buyerId: account.id, name: "Prices", status: "delivered" });
  const refundedAt = new Date("2026-11-20T10:00:00Z");
  await setOrderStatus(id, "refunded", refundedAt);
  expect((await dates(id)).refundedAt).toEqual(refundedAt);
  await setOrderStatus(id, "refunded", new Date("2026-11-21T10:00:00Z"));
  expect((await dates(id)).refundedAt).toEqual(refundedAt);
  await setOrderStatus(id, "delivered");
  expect(await dates(id)).toMatchObject({ refundedAt: null, deliveredAt: expect.any(Date) });
});

it("announces a status change when the job queue takes longer to start than a transaction may last", async () => {
  const account = await buyer("slow-queue-start");
  const endpoint = await db().webhookEndpoint.create({
    data: {
      buyerId: account.id,
      url: "https://hooks.example.com/orders",
      events: ["order.delivered"],
      secretSealed: "sealed",
      secretHint: "hint",
    },
  });
  const { id } = await createOrder({ buyerId: account.id, name: "Slow start", status: "unfinished" });
  // The queue's schema exists; then this process's queue is stopped, and its next start held up
  // for longer than Prisma's 5 s transaction timeout (pg-boss reads its version table first).
  await jobQueue();
  await closeJobQueue();
  const lock = await lockTable(env.database.url, "pgboss.version");
  try {
    const released = new Promise((resolve) => setTimeout(resolve, 6_000)).then(lock.release);
    await setOrderStatus(id, "delivered");
    await released;
  } finally {
    await lock.release();
  }
  const messages = await db().webhookMessage.findMany({ where: { endpointId: endpoint.id } });
  expect(messages.map((message) => message.eventType)).toEqual(["order.delivered"]);
  // Its delivery job committed with it.
  const jobs = await db().$queryRaw<{ count: number }[]>`
    SELECT count(*)::int AS count FROM pgboss.job WHERE data->>'messageId' = ${messages[0]!.id}`;
  expect(jobs).toEqual([{ count: 1 }]);
});
