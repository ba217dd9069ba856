import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue, jobQueue, QUEUES } from "../../lib/queue";
import { authenticateApiKey } from "../../lib/keys/verify";
import { createApiKey, replaceApiKey } from "../../lib/keys";
import { runKeyLifecycle } from "../../lib/keys/lifecycle";
import { listSecurityEvents } from "../../lib/security/log";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { TEST_AUTH_SECRET } from "../helpers/server";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("key_lifecycle");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  process.env.WEBHOOK_ALLOW_PRIVATE = "true";
  process.env.WEBHOOK_ALLOW_INSECURE = "true";
  await jobQueue(); // its schema exists before the first count
});
afterAll(async () => {
  await closeJobQueue();
  await env?.cleanup();
});

const DAY = 86_400_000;
/** The jobs queued for `queue` (pg-boss's own table), as their data. */
async function queued(queue: string): Promise<Record<string, unknown>[]> {
  const rows = await db().$queryRawUnsafe<{ data: Record<string, unknown> }[]>(
    `SELECT data FROM pgboss.job WHERE name = $1 ORDER BY created_on`,
    queue,
  );
  return rows.map(({ data }) => data);
}

describe("the key lifecycle (injected clock, real PostgreSQL)", () => {
  it("reminds 7 days and 1 day before expiry, once each, however many workers run it at once", async () => {
    const account = await buyer("lifecycle-remind");
    await createEndpoint({
      buyerId: account.id,
      url: "http://127.0.0.1:9/hooks",
      events: ["key.expiring", "key.expired"],
    });
    const key = await apiKey(account.id, { expiresInDays: 30 });
    const expiresAt = (await db().apiKey.findUniqueOrThrow({ where: { id: key.id } })).expiresAt.getTime();
    const mailsBefore = (await queued(QUEUES.mail)).filter(({ to }) => to === account.email).length;

    // 8 days before: nothing. 6 days before, three runs at once: one reminder.
    await runKeyLifecycle(new Date(expiresAt - 8 * DAY));
    await Promise.all([1, 2, 3].map(() => runKeyLifecycle(new Date(expiresAt - 6 * DAY))));
    await runKeyLifecycle(new Date(expiresAt - 5 * DAY));
    // 12 hours before: the 1-day reminder, once.
    await Promise.all([1, 2].map(() => runKeyLifecycle(new Date(expiresAt - DAY / 2))));
    // Expired: the key.expired event, once.
    await Promise.all([1, 2].map(() => runKeyLifecycle(new Date(expiresAt + 60_000))));

    const mails = (await queued(QUEUES.mail)).filter(({ to }) => to === account.email).slice(mailsBefore);
    expect(mails.map(({ subject }) => subject)).toEqual([
      "Your API key “test key” expires in 7 days",
      "Your API key “test key” expires tomorrow",
    ]);
    const messages = await db().webhookMessage.findMany({
      where: { endpoint: { buyerId: account.id } },
      orderBy: { createdAt: "asc" },
    });
    expect(messages.map(({ eventType }) => eventType)).toEqual(["key.expiring", "key.expiring", "key.expired"]);
    expect(JSON.parse(messages[0]!.payload).data).toEqual({
      id: key.id,
      name: "test key",
      permission: "datasets:read",
      expires_at: new Date(expiresAt).toISOString(),
    });
  });

  it("retires a key replaced with an overlap: it works until the overlap ends and is refused from then on", async () => {
    const account = await buyer("lifecycle-overlap");
    const old = await apiKey(account.id);
    const now = new Date();
    const replacement = await replaceApiKey({
      buyerId: account.id,
      keyId: old.id,
      expiresInDays: 90,
      overlap: "1h",
      now,
    });
    expect(replacement.oldRetiresAt).toEqual(new Date(now.getTime() + 3_600_000));
    const header = (secret: string) => `Bearer ${secret}`;
    expect((await authenticateApiKey(header(old.secret), new Date(now.getTime() + 3_599_000))).keyId).toBe(old.id);
    await expect(authenticateApiKey(header(old.secret), new Date(now.getTime() + 3_600_000))).rejects.toMatchObject({
      code: "revoked_api_key",
    });
    expect((await authenticateApiKey(header(replacement.secret), new Date(now.getTime() + 3_600_000))).keyId).toBe(
      replacement.id,
    );
    // The lifecycle records the retirement as a revocation at the retirement time, once.
    await runKeyLifecycle(new Date(now.getTime() + 3_700_000));
    await runKeyLifecycle(new Date(now.getTime() + 3_800_000));
    const stored = await db().apiKey.findUniqueOrThrow({ where: { id: old.id } });
    expect(stored.revokedAt).toEqual(new Date(now.getTime() + 3_600_000));
    const revoked = await listSecurityEvents(account.id, { kind: "key_revoked" });
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ actor: "system" });
  });

  it("refuses to replace a key that is already retiring: its retirement never moves later, no third key", async () => {
    const account = await buyer("lifecycle-twice");
    const old = await apiKey(account.id);
    const now = new Date();
    const first = await replaceApiKey({ buyerId: account.id, keyId: old.id, expiresInDays: 90, overlap: "1h", now });
    const later = new Date(now.getTime() + 60_000);
    await expect(
      replaceApiKey({ buyerId: account.id, keyId: old.id, expiresInDays: 90, overlap: "7d", now: later }),
    ).rejects.toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/already been replaced/) });
    const stored = await db().apiKey.findUniqueOrThrow({ where: { id: old.id } });
    expect(stored.retiresAt).toEqual(first.oldRetiresAt);
    await expect(authenticateApiKey(`Bearer ${old.secret}`, new Date(now.getTime() + 3_600_000))).rejects.toMatchObject(
      { code: "revoked_api_key" },
    );
    expect(await db().apiKey.count({ where: { buyerId: account.id, name: "test key" } })).toBe(2);
  });

  it("makes one replacement when the same key is replaced twice at once", async () => {
    const account = await buyer("lifecycle-race");
    const old = await apiKey(account.id);
    const results = await Promise.allSettled(
      [1, 2, 3].map(() => replaceApiKey({ buyerId: account.id, keyId: old.id, expiresInDays: 30, overlap: "24h" })),
    );
    expect(results.filter(({ status }) => status === "fulfilled")).toHaveLength(1);
    expect(await db().apiKey.count({ where: { buyerId: account.id, name: "test key" } })).toBe(2);
  });

  it("revokes at once when replaced with no overlap", async () => {
    const account = await buyer("lifecycle-none");
    const old = await apiKey(account.id);
    await replaceApiKey({ buyerId: account.id, keyId: old.id, expiresInDays: 30, overlap: "none" });
    await expect(authenticateApiKey(`Bearer ${old.secret}`)).rejects.toMatchObject({ code: "revoked_api_key" });
  });

  it("refuses a key name with a control character (PostgreSQL cannot store NUL) with a clear error", async () => {
    const account = await buyer("lifecycle-nul");
    await expect(
      createApiKey({ buyerId: account.id, name: "ware\u0000house", permission: "datasets:read", expiresInDays: 30 }),
    ).rejects.toMatchObject({ code: "invalid_argument", message: "A key name cannot contain control characters." });
  });
});
