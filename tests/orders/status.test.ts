import { afterAll, beforeAll, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createOrder, setOrderStatus } from "../../lib/orders/admin";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("order_status");
});
afterAll(async () => {
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
