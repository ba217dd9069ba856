import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { DEMO_EMAIL } from "../../lib/docs/examples";
import { seedDemo } from "../../scripts/seed-demo";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;
let html: string;
beforeAll(async () => {
  env = await createTestEnvironment("api_reference");
  await seedDemo(() => {});
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
  html = await (await fetch(`${server.url}/docs/api`)).text();
});
afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const unescape = (text: string) =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&#x27;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The path an endpoint's example calls and the response body the page shows for it. */
function example(operation: string): { path: string; body: string } {
  const path = new RegExp(`id="${operation}" data-example-path="([^"]+)"`).exec(html)?.[1];
  const body = new RegExp(`data-testid="example-response-${operation}"[^>]*><code>([\\s\\S]*?)</code>`).exec(html)?.[1];
  if (!path || !body) throw new Error(`no example for ${operation} on the page`);
  return { path: unescape(path), body: unescape(body) };
}

describe("the API reference with the demo data loaded", () => {
  it("shows examples that answer exactly as shown when called with a key of the demo account", async () => {
    expect(html).toContain(`those of the demo account (${DEMO_EMAIL})`);
    const demo = await db().user.findUniqueOrThrow({ where: { email: DEMO_EMAIL } });
    const datasetsKey = await apiKey(demo.id);
    const socialKey = await apiKey(demo.id, { permission: "scrape:read" });
    for (const [operation, key] of [
      ["listOrders", datasetsKey],
      ["getOrder", datasetsKey],
      ["previewFile", datasetsKey],
      ["getSocialProfile", socialKey],
      ["getTable", datasetsKey],
      ["listVersions", datasetsKey],
      ["getVersion", datasetsKey],
      ["getVersionQuality", datasetsKey],
      ["readTableRows", datasetsKey],
      ["runOrderSql", datasetsKey],
    ] as const) {
      const { path, body } = example(operation);
      const response = await fetch(`${server.url}/api/v1${path}`, {
        headers: { Authorization: `Bearer ${key.secret}` },
      });
      expect(response.status, operation).toBe(200);
      expect(await response.json(), operation).toEqual(JSON.parse(body));
    }
    const download = await fetch(`${server.url}/api/v1${example("downloadFile").path}`, {
      headers: { Authorization: `Bearer ${datasetsKey.secret}` },
      redirect: "manual",
    });
    expect(download.status).toBe(302);
    const changes = await fetch(`${server.url}/api/v1${example("downloadChanges").path}`, {
      headers: { Authorization: `Bearer ${datasetsKey.secret}` },
      redirect: "manual",
    });
    expect(changes.status).toBe(302);
  });

  it("explains Delta Sharing and MCP in its own words, and sends no reader to a file of docs/", () => {
    const text = html.replace(/<script[\s\S]*?<\/script>/g, "");
    expect(text).toContain('id="delta-sharing"');
    expect(text).toContain('id="mcp"');
    expect(text).not.toMatch(/docs\/[a-z-]+\.md/);
  });

  it("lists every object's fields and renders descriptions' Markdown (no raw backticks)", () => {
    for (const object of ["OrderPage", "Order", "File", "Problem", "SocialProfile"]) {
      expect(html).toContain(`data-testid="fields-${object}"`);
    }
    expect(html).toMatch(/<dt[^>]*>sha256/);
    const text = html.replace(/<script[\s\S]*?<\/script>/g, "").replace(/<pre[\s\S]*?<\/pre>/g, "");
    expect(text).not.toContain("`");
    expect(text).toContain("<code");
  });

  it("dates the demo's files and deliveries consistently with its orders", async () => {
    const orders = await db().order.findMany({
      where: { buyer: { email: DEMO_EMAIL } },
      include: { files: true },
    });
    expect(orders.map(({ status }) => status).sort()).toEqual(["delivered", "refunded", "unfinished"]);
    for (const order of orders) {
      for (const file of order.files) expect(file.createdAt.getTime()).toBeGreaterThan(order.paidAt.getTime());
      // What came with the delivery is dated at or before it; a table's refreshes (versions after the first, and
      // their change files) come later.
      const refreshes = await db().tableVersion.findMany({
        where: { table: { orderId: order.id }, version: { gt: 1 } },
        select: { publicationId: true, changeFileId: true },
      });
      const refreshFiles = (file: (typeof order.files)[number]) =>
        refreshes.some(
          ({ publicationId, changeFileId }) => file.publicationId === publicationId || file.id === changeFileId,
        );
      const delivered = order.files.filter((file) => !refreshFiles(file));
      if (order.deliveredAt) expect(delivered.every((file) => file.createdAt <= order.deliveredAt!)).toBe(true);
      if (order.deliveredAt) expect(refreshes.length).toBeGreaterThan(0);
      if (order.refundedAt) expect(order.files.every((file) => file.createdAt < order.refundedAt!)).toBe(true);
    }
  });

  it("names the demo's tables for what they hold, none with a number after it", async () => {
    const tables = await db().orderTable.findMany({
      where: { order: { buyer: { email: DEMO_EMAIL } } },
      orderBy: { name: "asc" },
      select: { name: true },
    });
    expect(tables.map((table) => table.name)).toEqual([
      "product_reviews",
      "products",
      "rental_listings",
      "weekly_prices",
    ]);
  });
});
