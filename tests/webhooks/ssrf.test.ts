import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue } from "../../lib/queue";
import { deliverMessage } from "../../lib/webhooks/deliver";
import { createEndpoint, endpointUrlSchema, sendTestEvent } from "../../lib/webhooks/endpoints";
import { isForbiddenAddress } from "../../lib/webhooks/ssrf";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { startReceiver } from "./receiver";

/**
 * Deliveries over the wire with WEBHOOK_ALLOW_PRIVATE=false (the production default; outside
 * production private receivers are allowed unless it says so). Every packet stays on loopback: the
 * receivers are loopback addresses, which is exactly what must be refused.
 */
let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("webhooks_ssrf");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  process.env.WEBHOOK_ALLOW_INSECURE = "true";
  process.env.WEBHOOK_ALLOW_PRIVATE = "false";
});
afterAll(async () => {
  await closeJobQueue();
  await env?.cleanup();
});

/** An endpoint at `url` (made as if the name had resolved elsewhere then: the check is at delivery) and a test message. */
async function messageTo(url: string) {
  process.env.WEBHOOK_ALLOW_PRIVATE = "true";
  try {
    const account = await buyer("ssrf");
    const { id } = await createEndpoint({ buyerId: account.id, url, events: ["order.delivered"] });
    return await sendTestEvent(account.id, id);
  } finally {
    process.env.WEBHOOK_ALLOW_PRIVATE = "false";
  }
}

const lastAttempt = async (messageId: string) =>
  (await db().webhookAttempt.findMany({ where: { messageId }, orderBy: { attemptedAt: "desc" }, take: 1 }))[0];

describe("webhook deliveries never reach private addresses", () => {
  it.each([
    [
      "127.0.0.1",
      "127.0.0.1",
      (port: number) => `http://127.0.0.1:${port}/hooks`,
      /127\.0\.0\.1 is a private or reserved address/,
    ],
    ["[::1]", "::1", (port: number) => `http://[::1]:${port}/hooks`, /::1 is a private or reserved address/],
    [
      "a name resolving to loopback",
      "127.0.0.1",
      (port: number) => `http://localhost:${port}/hooks`,
      /localhost resolves to .*a private or reserved address/,
    ],
  ])("refuses an endpoint at %s", async (_, host, url, error) => {
    const receiver = await startReceiver(() => 200, host);
    try {
      const messageId = await messageTo(url(receiver.port));
      const outcome = await deliverMessage(messageId);
      expect(outcome).toMatchObject({ result: "retry", error: expect.stringMatching(error) });
      expect(receiver.received).toHaveLength(0);
      expect((await lastAttempt(messageId))?.error).toMatch(error);
    } finally {
      await receiver.close();
    }
  });

  it("does not follow a redirect to loopback", async () => {
    // The first hop stands for a public receiver: 127.0.0.2 is let through by this filter only.
    const target = await startReceiver(() => 200, "127.0.0.1");
    const redirecting = await startReceiver(() => 302, "127.0.0.2");
    try {
      const messageId = await messageTo(redirecting.url);
      const allowOnlyFirstHop = (address: string) => address !== "127.0.0.2" && isForbiddenAddress(address);
      const outcome = await deliverMessage(messageId, { isForbidden: allowOnlyFirstHop });
      expect(redirecting.received).toHaveLength(1);
      expect(target.received).toHaveLength(0);
      expect(outcome).toMatchObject({ result: "retry", error: "answered 302 (redirects are not followed)" });
    } finally {
      await Promise.all([target.close(), redirecting.close()]);
    }
  });

  it("refuses private and local URLs when an endpoint is added", () => {
    for (const url of [
      "http://127.0.0.1/hooks",
      "http://localhost/hooks",
      "https://10.0.0.1/",
      "https://[fc00::1]/",
      "https://169.254.169.254/",
    ]) {
      expect(endpointUrlSchema.safeParse(url).success, url).toBe(false);
    }
    expect(endpointUrlSchema.safeParse("http://example.com/hooks").error?.issues[0]?.message).toBe(
      "Use an https:// URL: events carry your order data.",
    );
    expect(endpointUrlSchema.safeParse("https://user:pw@example.com/").error?.issues[0]?.message).toMatch(/user name/);
    expect(endpointUrlSchema.safeParse("https://example.com/\u0000hooks").error?.issues[0]?.message).toMatch(
      /^That is not a URL/,
    );
    expect(endpointUrlSchema.safeParse("https://example.com/hooks").success).toBe(true);
  });

  it("refuses cloud metadata in any form when an endpoint is added, even with WEBHOOK_ALLOW_PRIVATE=true", () => {
    process.env.WEBHOOK_ALLOW_PRIVATE = "true";
    try {
      for (const host of ["169.254.169.254", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]", "[fd00:ec2::254]"]) {
        expect(endpointUrlSchema.safeParse(`https://${host}/`).error?.issues[0]?.message, host).toBe(
          "That address is private, local or reserved: events can only be sent to a public address.",
        );
      }
      expect(endpointUrlSchema.safeParse("https://10.0.0.1/").success).toBe(true);
    } finally {
      process.env.WEBHOOK_ALLOW_PRIVATE = "false";
    }
  });
});
