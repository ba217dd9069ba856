import { afterAll, beforeAll, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createShareLink } from "../../lib/share-links";
import {
  listSecurityEvents,
  securityEventsCsv,
  shareCreatedDetail,
  type SecurityEventView,
} from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;
beforeAll(async () => {
  env = await createTestEnvironment("security_log");
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
});
afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

it("counts a share link's opens in one row, with the address the server saw, never one the client claims", async () => {
  const account = await buyer("security-share");
  const shared = await order(account.id, { name: "Prices" });
  const link = await createShareLink({ buyerId: account.id, orderId: shared.id, expiry: 7, label: "for Acme" });
  for (let i = 0; i < 3; i++) {
    const response = await fetch(`${server.url}/share/${link.token}`, {
      headers: { "X-Dataset-Access-Client-Ip": "203.0.113.9" },
    });
    expect(response.status).toBe(200);
  }
  const [opened, ...others] = await listSecurityEvents(account.id, { kind: "share_opened" });
  expect(others).toEqual([]);
  // Opened by whoever holds the link: the log names the link, not "System".
  expect(opened).toMatchObject({
    count: 3,
    actor: "share_link",
    actorName: "Share link “for Acme”",
    detail: "Share link of “Prices”",
  });
  expect(opened!.ip).toBe("127.0.0.1");
});

it("notes each key that expired unrevoked once, at its expiry, however often the log is read", async () => {
  const account = await buyer("security-expired");
  const key = await apiKey(account.id, { expiresInDays: 30 });
  const expiredAt = new Date(Date.now() - 60_000);
  await db().apiKey.update({ where: { id: key.id }, data: { expiresAt: expiredAt } });
  await listSecurityEvents(account.id);
  const events = await listSecurityEvents(account.id, { kind: "key_expired" });
  expect(events).toHaveLength(1);
  expect(events[0]!.createdAt.getTime()).toBe(expiredAt.getTime());
});

it("exports CSV whose cells cannot run as spreadsheet formulas", () => {
  const event: SecurityEventView = {
    id: "sev_1",
    kind: "key_created",
    actor: "session",
    actorName: "You (dashboard)",
    ip: "127.0.0.1",
    detail: '=HYPERLINK("http://evil")',
    count: 1,
    createdAt: new Date("2026-11-22T10:00:00Z"),
    lastAt: new Date("2026-11-22T10:00:00Z"),
  };
  const [header, row] = securityEventsCsv([event]).trim().split("\r\n");
  expect(header).toBe('"time","event","detail","actor","ip","count","last"');
  expect(row).toBe(
    '"2026-11-22T10:00:00.000Z","key_created","\'=HYPERLINK(""http://evil"")","session","127.0.0.1","1","2026-11-22T10:00:00.000Z"',
  );
});

it("refuses a share link for an order that is not delivered, and records nothing", async () => {
  const account = await buyer("security-refunded");
  for (const status of ["refunded", "unfinished"] as const) {
    const refused = await order(account.id, { status });
    await expect(createShareLink({ buyerId: account.id, orderId: refused.id, expiry: 7 })).rejects.toThrow(
      `Share links can be made for delivered orders only; this order is ${status}.`,
    );
  }
  expect(await db().shareLink.count({ where: { order: { buyerId: account.id } } })).toBe(0);
});

it("writes a share link's expiry as the log writes its dates, not as ISO text", () => {
  const expiresAt = new Date("2026-12-09T08:30:00.000Z");
  expect(shareCreatedDetail("Prices", "for Acme", expiresAt)).toBe(
    "Share link of “Prices” (for Acme), expires 2026-12-09 08:30 UTC",
  );
  expect(shareCreatedDetail("Prices", null, null)).toBe("Share link of “Prices”, never expires");
});
