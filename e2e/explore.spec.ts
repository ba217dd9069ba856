import { Readable } from "node:stream";
import type { Download, Locator, Page } from "@playwright/test";
import { db } from "../lib/db/client";
import { createShareLink } from "../lib/share-links";
import { describeTable } from "../lib/tables/dictionary";
import { publishTable } from "../lib/tables/publish";
import { buyer, order } from "../tests/helpers/fixtures";
import { expect, expectNoAxeViolations, screenshot, signIn, test } from "./helpers";
import { workerStateOf } from "./worker-state";

// Signing in and waiting for the server's worker to publish the table take a while.
test.describe.configure({ timeout: 180_000 });

/** SKU-1 to SKU-40 at twice their number: price >= 76 is SKU-38, 39 and 40. */
const PRICES = `sku,title,price\n${Array.from({ length: 40 }, (_, i) => `SKU-${i + 1},Product ${i + 1},${(i + 1) * 2}`).join("\n")}\n`;

/** A buyer's delivered order with a keyed price table, published by the server's worker. */
async function buyerWithPriceTable(label: string) {
  const account = await buyer(label);
  const delivered = await order(account.id, { name: `${label}: prices`, status: "delivered" });
  await publishTable({
    orderId: delivered.id,
    table: "prices",
    key: ["sku"],
    parts: [{ name: "prices.csv", source: { stream: Readable.from([Buffer.from(PRICES)]) } }],
  });
  const deadline = Date.now() + 120_000;
  while ((await db().orderTable.findFirst({ where: { orderId: delivered.id } }))?.currentVersion !== 1) {
    if (Date.now() > deadline) {
      throw new Error(`The price table was not published within 120 s: ${await workerStateOf(delivered.id)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return { ...account, delivered };
}

async function textOf(download: Download): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function expectNoSidewaysScroll(page: Page, where: string) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `${where} is wider than the screen`).toBeLessThanOrEqual(0);
}

/** Opens the table's preview and filters it: `price >= 76`, without the title column. */
async function filterThePreview(page: Page) {
  await page.getByRole("button", { name: "Preview prices, version 1" }).click();
  const preview = page.getByRole("dialog", { name: "Preview of prices, version 1" });
  await expect(preview.getByTestId("preview-summary")).toHaveText("The first 20 of 40 rows.");
  // The where field's example names this table's own columns, with values of its first row.
  await expect(preview.getByLabel("Where")).toHaveAttribute("placeholder", "sku = 'SKU-1' AND price > 2");
  await preview.locator("summary", { hasText: "Columns to show" }).click();
  await preview.getByRole("checkbox", { name: "title" }).uncheck();
  await preview.getByLabel("Where").fill("price >= 76");
  await preview.getByRole("button", { name: "Apply filter" }).click();
  const filtered = preview.getByTestId("filtered-table");
  await expect(filtered.locator("thead th")).toHaveText([/^sku/, /^price/]);
  await expect(filtered.locator("tbody tr")).toHaveText([/SKU-38\s*76/, /SKU-39\s*78/, /SKU-40\s*80/]);
  await expect(preview.getByTestId("filtered-summary")).toHaveText("Matching rows 1 to 3 (the last), version 1.");
  return preview;
}

test("a filter on a table's preview: rows and columns from the server, precise errors, desktop and phone", async ({
  page,
}) => {
  const account = await buyerWithPriceTable("e2e-filter");
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);
  const preview = await filterThePreview(page);
  await expectNoAxeViolations(page, "table preview, filtered");
  await screenshot(page, "filter-bar-desktop");

  await expectFilterRefusals(preview);
  await expectNoAxeViolations(page, "table preview, filter refused");
  await preview.getByRole("button", { name: "Clear filter" }).click();
  await expect(preview.getByTestId("preview-summary")).toHaveText("The first 20 of 40 rows.");
  await expect(preview.getByTestId("filter-where-error")).toHaveCount(0);
  await page.keyboard.press("Escape");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  const onPhone = await filterThePreview(page);
  await expectNoSidewaysScroll(page, "the order page with a filtered preview");
  await expectNoAxeViolations(page, "table preview, filtered, phone width");
  await screenshot(page, "filter-bar-phone");
  await expectFilterRefusals(onPhone);
  await expectNoAxeViolations(page, "table preview, filter refused, phone width");
});

/**
 * Refusals name what to fix, under the where field, which is marked invalid; the rows of the filter
 * applied before are gone, not left under the error as if they matched.
 */
async function expectFilterRefusals(preview: Locator) {
  const where = preview.getByLabel("Where");
  for (const [text, named] of [
    ["price > (SELECT 1)", /subquery/],
    ["nope = 1", /nope/],
  ] as const) {
    await where.fill(text);
    await preview.getByRole("button", { name: "Apply filter" }).click();
    await expect(preview.getByTestId("filter-where-error")).toHaveText(named);
    await expect(where).toHaveAttribute("aria-invalid", "true");
    await expect(preview.getByTestId("filtered-table")).toHaveCount(0);
    await expect(preview.getByTestId("filtered-summary")).toHaveCount(0);
    await expect(preview.getByTestId("filtered-none")).toHaveText(
      "No rows shown: fix the filter above, or clear it to see the preview again.",
    );
  }
}

/** The sidebar shows the table's description and, under a described column, what it holds (also its tooltip). */
async function expectSidebarDictionary(page: Page) {
  const sidebar = page.getByTestId("query-tables");
  await expect(sidebar.getByTestId("query-table-description")).toHaveText("Shelf prices of every listed product.");
  const price = sidebar
    .getByRole("list", { name: "Columns of prices" })
    .getByRole("listitem")
    .filter({ hasText: /^price/ });
  await expect(price.getByTestId("query-column-description")).toBeVisible();
  await expect(price.getByTestId("query-column-description")).toHaveText("Price in euros, VAT included. Unit: EUR");
  await expect(price).toHaveAttribute("title", "Price in euros, VAT included. · Unit: EUR");
  // A column nobody described shows its name and type only.
  await expect(sidebar.getByTestId("query-column-description")).toHaveCount(1);
}

test("a query on the Query page, its grid, its CSV and the history, desktop and phone", async ({ page }) => {
  const account = await buyerWithPriceTable("e2e-query");
  await describeTable(account.delivered.id, "prices", {
    description: "Shelf prices of every listed product.",
    columns: [{ name: "price", description: "Price in euros, VAT included.", unit: "EUR" }],
  });
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);
  await page.getByRole("link", { name: "Query these tables with SQL" }).click();
  await expect(page).toHaveURL(new RegExp(`/orders/${account.delivered.id}/query$`));
  await expect(page.getByRole("list", { name: "Columns of prices" }).getByRole("listitem")).toHaveText([
    /^sku\s*VARCHAR/,
    /^title\s*VARCHAR/,
    /^price\s*BIGINT\s*Price in euros, VAT included\. Unit: EUR$/,
  ]);
  await expectSidebarDictionary(page);

  const editor = page.getByLabel("SQL");
  await editor.fill("SELECT sku, price * 10 AS cents\nFROM prices\nWHERE price >= 76\nORDER BY sku");
  await editor.press("Control+Enter");
  const grid = page.getByTestId("result-table");
  await expect(grid.locator("thead th")).toHaveText([/^sku/, /^cents/]);
  await expect(grid.locator("tbody tr")).toHaveText([/SKU-38\s*760/, /SKU-39\s*780/, /SKU-40\s*800/]);
  await expect(page.getByTestId("result-summary")).toHaveText("3 rows.");
  const [csv] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "CSV" }).click()]);
  expect(csv.suggestedFilename()).toBe("query-result.csv");
  expect(await textOf(csv)).toBe("sku,cents\r\nSKU-38,760\r\nSKU-39,780\r\nSKU-40,800\r\n");
  const history = page.getByTestId("query-history-entry");
  await expect(history.first()).toContainText("3 rows");
  await expect(history.first()).toContainText("WHERE price >= 76");
  await expectNoAxeViolations(page, "Query page with a result");
  await screenshot(page, "query-page-desktop");

  // Anything but one SELECT is refused with the engine's reason, and the history says so.
  await editor.fill("DROP TABLE prices");
  await page.getByRole("button", { name: "Run query" }).click();
  await expect(page.getByTestId("query-error")).not.toBeEmpty();
  await expect(editor).toHaveAttribute("aria-invalid", "true");
  await expect(history.first()).toContainText("refused");
  await expect(history).toHaveCount(2);
  // An earlier query comes back into the editor.
  await history.nth(1).getByRole("button", { name: "Edit again" }).click();
  await expect(editor).toHaveValue(/WHERE price >= 76/);
  await expect(editor).toBeFocused();

  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await page.getByLabel("SQL").fill('SELECT count(*)::INTEGER AS n FROM "prices@1"');
  await page.getByRole("button", { name: "Run query" }).click();
  await expect(page.getByTestId("result-table").locator("tbody tr")).toHaveText([/40/]);
  await expectSidebarDictionary(page);
  await expectNoSidewaysScroll(page, "the Query page");
  await expectNoAxeViolations(page, "Query page, phone width");
  await screenshot(page, "query-page-phone");
});

test("a refunded order with tables offers no Query page, which says they can no longer be queried", async ({
  page,
}) => {
  const account = await buyerWithPriceTable("e2e-query-refunded");
  await db().order.update({
    where: { id: account.delivered.id },
    data: { status: "refunded", refundedAt: new Date() },
  });
  await signIn(page, account.email);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto(`/orders/${account.delivered.id}`);
    await expect(page.getByTestId("not-downloadable")).toBeVisible();
    await expect(page.getByRole("link", { name: "Query these tables with SQL" })).toHaveCount(0);
    // Asked for by its address, the Query page says why, in the past tense a refund calls for.
    await page.goto(`/orders/${account.delivered.id}/query`);
    await expect(page.getByTestId("query-refused")).toHaveText(
      "This order was refunded, so its tables can no longer be queried.",
    );
    await expect(page.getByLabel("SQL")).toHaveCount(0);
    await expectNoAxeViolations(page, `Query page of a refunded order at ${width} px`);
  }
});

test("a share page gets the filter bar, not the Query page", async ({ page }) => {
  const account = await buyerWithPriceTable("e2e-filter-share");
  const link = await createShareLink({ buyerId: account.id, orderId: account.delivered.id, expiry: 7 });
  await page.goto(`/share/${link.token}`);
  await expect(page.getByRole("link", { name: "Query these tables with SQL" })).toHaveCount(0);
  await filterThePreview(page);
  await expectNoAxeViolations(page, "share page, filtered preview");
  // The Query page is the buyer's: without a session it asks to sign in.
  await page.goto(`/orders/${account.delivered.id}/query`);
  await expect(page).toHaveURL(/\/signin/);
});
