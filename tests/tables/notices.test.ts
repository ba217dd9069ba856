import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { orderSchema, tableSchema } from "../../lib/schemas/api";
import { noticeSchema, type Notice } from "../../lib/schemas/quality";
import { postNotice } from "../../lib/tables/notices";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { runAdmin, runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/**
 * Notices to a table's buyers (contract Part 6): `table:notice` posts one, the Table object lists
 * those of the last 90 days newest first (also in the order's tables), and the `table.notice`
 * event commits with it. Bad input (a 100 KB message, control characters, an unknown type, a
 * date that is none) is refused with a sentence, and nothing is stored or announced.
 */

let env: TestEnvironment;
let server: TestServer;
let cliEnv: Record<string, string | undefined>;
const fixtures = {} as { orderId: string; key: string };

beforeAll(async () => {
  env = await createTestEnvironment("notices");
  Object.assign(process.env, {
    AUTH_SECRET: TEST_AUTH_SECRET,
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
  });
  cliEnv = { DATABASE_URL: env.database.url, STORAGE_DIR: env.storageDir };
  const account = await buyer("notices");
  fixtures.orderId = (await order(account.id)).id;
  fixtures.key = (await apiKey(account.id)).secret;
  await createEndpoint({ buyerId: account.id, url: "http://127.0.0.1:9/hooks", events: ["table.notice"] });
  await publishTable({
    orderId: fixtures.orderId,
    table: "products",
    parts: [{ name: "products.csv", source: { stream: Readable.from([Buffer.from("id,price\n1,2\n")]) } }],
  });
  await processPendingNow();
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const api = async (path: string) => {
  const response = await fetch(`${server.url}/api/v1${path}`, { headers: { Authorization: `Bearer ${fixtures.key}` } });
  expect(response.status).toBe(200);
  return response.json();
};
const noticeEvents = async () =>
  (await db().webhookMessage.findMany({ where: { eventType: "table.notice" }, orderBy: { createdAt: "asc" } })).map(
    (message) => JSON.parse(message.payload) as { type: string; data: Record<string, unknown> },
  );

describe("table:notice", { timeout: 120_000 }, () => {
  let posted: Notice[] = [];

  it("posts a notice, announced as table.notice, listed on the table newest first", async () => {
    const delay = await runAdminJson<Notice>(
      cliEnv,
      "table:notice",
      "--order",
      fixtures.orderId,
      "--table",
      "products",
      "--type",
      "delay",
      "--message",
      "  The November refresh comes two days late.\r\nSorry.  ",
      "--effective-at",
      "2026-12-01T00:00:00+01:00",
    );
    expect(noticeSchema.strict().parse(delay)).toMatchObject({
      type: "delay",
      message: "The November refresh comes two days late.\nSorry.",
      effective_at: "2026-11-30T23:00:00.000Z",
    });
    const change = await postNotice({
      orderId: fixtures.orderId,
      table: "products",
      type: "schema_change",
      message: "A column currency is added on December 5.",
    });
    expect(change.effective_at).toBeNull();
    posted = [change, delay];

    const table = tableSchema.strict().parse(await api(`/orders/${fixtures.orderId}/tables/products`));
    expect(table.notices).toEqual(posted);
    const inOrder = orderSchema.parse(await api(`/orders/${fixtures.orderId}`));
    expect(inOrder.tables[0]!.notices).toEqual(posted);

    const events = await noticeEvents();
    expect(events.map(({ type, data }) => [type, data])).toEqual([
      ["table.notice", { order_id: fixtures.orderId, table: "products", ...delay }],
      ["table.notice", { order_id: fixtures.orderId, table: "products", ...change }],
    ]);
  });

  it("lists only the notices of the last 90 days", async () => {
    const old = await postNotice({
      orderId: fixtures.orderId,
      table: "products",
      type: "deprecation",
      message: "Old.",
    });
    await db().tableNotice.update({
      where: { id: old.id },
      data: { createdAt: new Date(Date.now() - 91 * 24 * 3600_000) },
    });
    const table = tableSchema.parse(await api(`/orders/${fixtures.orderId}/tables/products`));
    expect(table.notices.map((notice) => notice.id)).toEqual(posted.map((notice) => notice.id));
  });

  const base = { table: "products", type: "delay", message: "Late." };
  it.each([
    ["a 100 KB message", { message: "x".repeat(100_000) }, /100,000 characters; at most 2,000/],
    ["an empty message", { message: " \n " }, /message is empty/],
    ["a NUL in the message", { message: "late\u0000" }, /control characters/],
    ["an escape sequence in the message", { message: "\u001b[31mlate" }, /control characters/],
    ["a tab in the message", { message: "late\tagain" }, /control characters/],
    ["an unknown type", { type: "outage" }, /type is one of schema_change, delay, deprecation/],
    ["a date that is none", { effectiveAt: "2026-13-01T00:00:00Z" }, /not an ISO 8601 date and time/],
    ["a date in words", { effectiveAt: "tomorrow" }, /not an ISO 8601 date and time/],
    ["an unknown table", { table: "nothing" }, /no table named "nothing"/],
  ])("refuses %s, storing and announcing nothing", async (_name, change, sentence) => {
    const before = [await db().tableNotice.count(), (await noticeEvents()).length];
    await expect(postNotice({ orderId: fixtures.orderId, ...base, ...change })).rejects.toThrow(sentence);
    expect([await db().tableNotice.count(), (await noticeEvents()).length]).toEqual(before);
  });

  it("refuses bad input on the command line with the sentence, and --json with its code", async () => {
    const result = await runAdmin(
      cliEnv,
      "table:notice",
      "--order",
      fixtures.orderId,
      "--table",
      "products",
      "--type",
      "delay",
      "--message",
      "x".repeat(100_000),
      "--json",
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: The message has 100,000 characters; at most 2,000 are allowed\.$/m);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: "invalid_argument" } });
    const unknownOrder = await runAdmin(
      cliEnv,
      "table:notice",
      "--order",
      "ord_00000000000000000000000000000000",
      "--table",
      "products",
      "--type",
      "delay",
      "--message",
      "Late.",
    );
    expect(unknownOrder).toMatchObject({ code: 1, stderr: expect.stringMatching(/No order with id/) });
  });
});
