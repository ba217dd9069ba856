import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { startSmtpServer, type ReceivedMail } from "../helpers/smtp";
import { waitFor } from "../helpers/wait";
import { publicationDone } from "./helpers";

/**
 * What the operator learns of a held publication (contract Part 6), from the production server
 * whose own job worker runs the gate: an e-mail to OPERATOR_EMAIL over SMTP naming the
 * publication and the check that held it, and table_publications_total{outcome="held"} at
 * /api/metrics. A publication that passes sends nothing.
 */

const METRICS_TOKEN = "metrics-token-for-the-quality-test-0123";
const OPERATOR = "data-ops@example.com";
let env: TestEnvironment;
let server: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
const received: ReceivedMail[] = [];

beforeAll(async () => {
  env = await createTestEnvironment("quality_notify");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  smtp = await startSmtpServer({ onMessage: (mail) => void received.push(mail) });
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", METRICS_TOKEN, EMAIL_SERVER: smtp.url, OPERATOR_EMAIL: OPERATOR },
  });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await smtp?.close();
  await env?.cleanup();
});

const publish = async (orderId: string, csv: string, name: string) =>
  (
    await publishTable({
      orderId,
      table: "prices",
      key: ["id"],
      parts: [{ name, source: { stream: Readable.from([Buffer.from(csv)]) } }],
    })
  ).publication;

async function heldCount(): Promise<number> {
  const text = await (
    await fetch(`${server.url}/api/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text();
  return Number(/^table_publications_total\{outcome="held"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

describe("a held publication", () => {
  it("e-mails OPERATOR_EMAIL and is counted; one that passes sends nothing", { timeout: 240_000 }, async () => {
    const account = await buyer("quality-notify");
    const { id: orderId } = await order(account.id, { status: "delivered" });
    const rows = Array.from({ length: 10 }, (_, index) => `${index + 1},${index * 2}`).join("\n");
    expect(await publicationDone(await publish(orderId, `id,price\n${rows}\n`, "v1.csv"))).toMatchObject({
      status: "ready",
    });
    expect(received).toEqual([]);
    expect(await heldCount()).toBe(0);

    // Half the rows gone: row_count_drop and deleted_fraction hold it.
    const held = await publish(orderId, `id,price\n${rows.split("\n").slice(0, 5).join("\n")}\n`, "v2.csv");
    expect(await publicationDone(held)).toMatchObject({ status: "held" });
    await waitFor(() => received.length > 0, 30_000, "the operator's e-mail");
    expect(received).toHaveLength(1);
    expect(received[0]!.to).toEqual([OPERATOR]);
    const mail = received[0]!.raw.replace(/=\r?\n/g, "");
    expect(mail).toMatch(/Subject: Publication held: table prices of order/);
    expect(mail).toContain(held);
    expect(mail).toContain("row_count_drop");
    expect(mail).toContain(`table:release --publication ${held}`);
    expect(await heldCount()).toBe(1);
  });
});
