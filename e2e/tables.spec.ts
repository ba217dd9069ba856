import { promises as fs } from "node:fs";
import { Readable } from "node:stream";
import type { Download, Locator, Page } from "@playwright/test";
import { db } from "../lib/db/client";
import { formatDate } from "../lib/format";
import { createShareLink } from "../lib/share-links";
import { describeTable, setCadence } from "../lib/tables/dictionary";
import { publishTable } from "../lib/tables/publish";
import { buyer, order } from "../tests/helpers/fixtures";
import { expect, expectNoAxeViolations, screenshot, signIn, test } from "./helpers";
import { workerStateOf } from "./worker-state";

// Signing in and waiting for the server's worker to make three versions take a while.
test.describe.configure({ timeout: 180_000 });

/** Week 1: 40 prices; week 2: two moved, SKU-5 dropped, SKU-41 listed; week 3: one more moved. */
function prices(week: number): string {
  const rows = [];
  for (let i = 1; i <= (week === 1 ? 40 : 41); i++) {
    if (week >= 2 && i === 5) continue;
    const price = i * 2 + (week >= 2 && (i === 7 || i === 9) ? 1 : 0) + (week === 3 && i === 11 ? 3 : 0);
    rows.push(`SKU-${i},Product ${i},${price}`);
  }
  return `sku,title,price\n${rows.join("\n")}\n`;
}

/** A buyer's delivered order with a keyed price table of `weeks` versions (three by default) made by the server's worker. */
async function buyerWithPriceTable(label: string, weeks = 3) {
  const account = await buyer(label);
  const delivered = await order(account.id, { name: `${label}: weekly prices`, status: "delivered" });
  for (let week = 1; week <= weeks; week++) {
    await publishTable({
      orderId: delivered.id,
      table: "prices",
      key: ["sku"],
      parts: [{ name: `prices-week-${week}.csv`, source: { stream: Readable.from([Buffer.from(prices(week))]) } }],
    });
  }
  const deadline = Date.now() + 120_000;
  for (;;) {
    const table = await db().orderTable.findFirstOrThrow({
      where: { orderId: delivered.id, name: "prices" },
      select: { currentVersion: true, versions: { select: { changeFileId: true } } },
    });
    if (table.currentVersion === weeks && table.versions.every((version) => version.changeFileId)) break;
    if (Date.now() > deadline) {
      throw new Error(
        `The price table did not reach version ${weeks} within 120 s: ${await workerStateOf(delivered.id)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return { ...account, delivered };
}

/**
 * Clicks a download of a format not made yet and waits for its download, checking the page said it
 * is being prepared meanwhile and was never reloaded (a mark set on it before survives).
 */
async function downloadInPlace(page: Page, where: Locator, link: Locator): Promise<Download> {
  await page.evaluate(() => ((window as { kept?: boolean }).kept = true));
  const url = page.url();
  const downloading = page.waitForEvent("download", { timeout: 90_000 });
  await link.click();
  await expect(where.getByTestId("download-preparing").filter({ hasText: /\S/ })).toHaveText(
    "Being prepared: the download starts when it is ready.",
  );
  const download = await downloading;
  expect(page.url()).toBe(url);
  expect(await page.evaluate(() => (window as { kept?: boolean }).kept)).toBe(true);
  await expect(where.getByTestId("download-preparing").filter({ hasText: /\S/ })).toHaveCount(0);
  return download;
}

/**
 * The element's text colour is a grey, not red or green: its chroma (CIELAB, as Chromium computes
 * Tailwind's colours) is that of a slate (about 15), not of red-800 or green-800 (40 and more).
 */
async function expectNeutral(element: Locator) {
  const color = await element.evaluate((node) => getComputedStyle(node).color);
  const [a, b] = (/^lab\([\d.]+ (-?[\d.]+) (-?[\d.]+)/.exec(color) ?? []).slice(1).map(Number);
  expect(Math.hypot(a ?? NaN, b ?? NaN), `${color} is a grey`).toBeLessThan(25);
}

test("a buyer sees a table's versions, what each changed, previews it and its changes", async ({ page }) => {
  const account = await buyerWithPriceTable("e2e-tables");
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);

  const table = page.getByTestId("table-row").filter({ hasText: "prices" });
  await expect(table.getByTestId("table-version")).toHaveText("3");
  await expect(table).toContainText("40"); // rows as of version 3
  await expect(table).toContainText("snapshot");
  // A table nobody described or promised a cadence for says so, and its data contract downloads.
  await expect(table.getByTestId("table-freshness")).toHaveText("No refresh cadence promised.");
  await expect(table.getByTestId("table-description")).toHaveCount(0);
  await expect(table.getByRole("link", { name: "Download the data contract of prices as YAML" })).toBeVisible();
  // The table lists its current part, which says whose part it is and downloads as itself and in other formats;
  // the older parts are in the history, and no plain file list repeats it.
  await expect(page.getByTestId("file-row")).toHaveText([/prices-week-3\.csv/]);
  const part = table.getByTestId("table-parts").getByTestId("file-row");
  await expect(part.getByTestId("file-table")).toHaveText("Part of table prices, version 3");
  await expect(part.getByRole("link", { name: "Download prices-week-3.csv", exact: true })).toBeVisible();
  await expect(part.getByRole("link", { name: /^Download prices-week-3\.csv as Parquet/ })).toBeVisible();
  await expect(page.getByRole("heading", { name: /Files$/ })).toHaveCount(0);
  // One Preview per table: its part downloads, the table's preview shows its rows.
  await expect(table.getByRole("button", { name: /^Preview/ })).toHaveCount(1);
  await expect(part.getByRole("button", { name: /^Preview/ })).toHaveCount(0);

  await table.getByText(/^Version history \(3 versions\)/).click();
  const versions = table.getByTestId("version-row");
  await expect(versions).toHaveCount(3);
  await expect(versions.nth(0).getByTestId("version-changes")).toHaveText("0 inserted, 1 updated, 0 deleted");
  await expect(versions.nth(1).getByTestId("version-changes")).toHaveText("+1 inserted, 2 updated, −1 deleted");
  await expect(versions.nth(2).getByTestId("version-changes")).toHaveText("+40 inserted, 0 updated, 0 deleted");
  await expectNoAxeViolations(page, "order page, version history open");
  await screenshot(page, "order-page-desktop");

  // The table's preview is its current version: SKU-5 is gone, SKU-11 costs 25.
  await table.getByRole("button", { name: "Preview prices, version 3" }).click();
  const preview = page.getByRole("dialog", { name: "Preview of prices, version 3" });
  await expect(preview.getByTestId("preview-summary")).toHaveText("The first 20 of 40 rows.");
  await expect(preview.getByRole("cell", { name: "SKU-5", exact: true })).toHaveCount(0);
  await expect(preview.locator("tbody tr").filter({ hasText: "SKU-11" }).getByRole("cell")).toHaveText([
    "SKU-11",
    "Product 11",
    "25",
  ]);
  await expectNoAxeViolations(page, "table preview open");
  await page.keyboard.press("Escape");

  // The changes of version 2, in key order, each update one row with its old and new price.
  await versions.nth(1).getByRole("button", { name: "Preview changes of prices version 2" }).click();
  const changes = page.getByRole("dialog", { name: "Preview of changes of prices version 2" });
  await expect(changes.getByTestId("preview-summary")).toHaveText("All 6 rows of the change file, as 4 changes.");
  const changeRows = changes.getByTestId("change-row");
  await expect(changeRows.nth(0).getByRole("cell")).toHaveText(["inserted", "SKU-41", "Product 41", "82"]);
  await expect(changeRows.nth(1).getByRole("cell")).toHaveText(["deleted", "SKU-5", "Product 5", "10"]);
  for (const [index, sku, before, after] of [
    [2, "SKU-7", "14", "15"],
    [3, "SKU-9", "18", "19"],
  ] as const) {
    await expect(changeRows.nth(index).getByRole("cell").nth(1)).toHaveText(sku);
    await expect(changeRows.nth(index).getByRole("cell").first()).toHaveText("updated");
    await expect(changeRows.nth(index).locator("del")).toHaveText(`was ${before}`);
    await expect(changeRows.nth(index).locator("ins")).toHaveText(`, now ${after}`);
  }
  await expect(changeRows).toHaveCount(4);
  // An update's old and new values are told apart by strike-through and weight, not by red and green.
  await expectNeutral(changeRows.nth(2).locator("del"));
  await expectNeutral(changeRows.nth(2).locator("ins"));
  await expectNoAxeViolations(page, "change preview open");
  await screenshot(page, "change-preview-desktop");
  await page.keyboard.press("Escape");

  // The change file downloads as Parquet at once; CSV is made on first request: the click waits in place
  // (the route's 202 and Retry-After) and the download starts once it is made, the history still open.
  const [parquet] = await Promise.all([
    page.waitForEvent("download"),
    versions.nth(1).getByRole("link", { name: "Download changes of prices version 2 as Parquet" }).click(),
  ]);
  expect((await parquet.path()) && (await parquet.createReadStream()) !== null).toBe(true);
  const csv = await downloadInPlace(
    page,
    versions.nth(1),
    versions.nth(1).getByRole("link", { name: "Download changes of prices version 2 as CSV" }),
  );
  const text = (await fs.readFile((await csv.path())!, "utf8")).split("\n");
  expect(text[0]).toBe("sku,title,price,_change_type");
  expect(text).toContain("SKU-41,Product 41,82,insert");
  await expect(table.getByTestId("version-history")).toHaveAttribute("open", "");

  // At phone width each version is a card: its changes and change file links are on screen, nothing scrolls sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/orders/${account.delivered.id}`);
  await page.getByText(/^Version history/).click();
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  for (const index of [0, 1, 2]) {
    const card = versions.nth(index);
    for (const shown of [
      card.getByTestId("version-changes"),
      card.getByRole("link", { name: `Download changes of prices version ${3 - index} as JSON Lines` }),
      card.getByRole("button", { name: `Preview changes of prices version ${3 - index}` }),
    ]) {
      const box = (await shown.boundingBox())!;
      expect(box.x, "left edge on screen").toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, "right edge on screen").toBeLessThanOrEqual(390);
    }
  }
  await expect(versions.nth(1).getByText("Change file", { exact: true })).toBeVisible();
  // On a phone too: one Preview for the table (not another for its part), grey old -> new values.
  await expect(table.getByRole("button", { name: /^Preview prices/ })).toHaveCount(1);
  await versions.nth(1).getByRole("button", { name: "Preview changes of prices version 2" }).click();
  const phoneChanges = page.getByRole("dialog", { name: "Preview of changes of prices version 2" });
  await expectNeutral(phoneChanges.getByTestId("change-row").nth(2).locator("del"));
  await expectNeutral(phoneChanges.getByTestId("change-row").nth(2).locator("ins"));
  await expectNoAxeViolations(page, "change preview open, phone width");
  await page.keyboard.press("Escape");
  // At phone width too a change file not made yet downloads in place.
  const jsonl = await downloadInPlace(
    page,
    versions.nth(0),
    versions.nth(0).getByRole("link", { name: "Download changes of prices version 3 as JSON Lines" }),
  );
  expect(jsonl.suggestedFilename()).toMatch(/\.jsonl$/);
  await expectNoAxeViolations(page, "order page at phone width, version history open");
  await screenshot(page, "order-page-phone");
  await table
    .getByTestId("version-history")
    .screenshot({ path: "test-results/e2e/screenshots/version-history-phone.png" });
});

test("a share page shows each table's current version, without its history", async ({ page }) => {
  const account = await buyerWithPriceTable("e2e-tables-share");
  const link = await createShareLink({ buyerId: account.id, orderId: account.delivered.id, expiry: 7 });
  await page.goto(`/share/${link.token}`);
  const table = page.getByTestId("table-row").filter({ hasText: "prices" });
  await expect(table.getByTestId("table-version")).toHaveText("3");
  await expect(table.getByTestId("version-history")).toHaveCount(0);
  // The data contract is the buyer's to download: a share page shows the freshness, not the contract.
  await expect(table.getByTestId("table-freshness")).toHaveText("No refresh cadence promised.");
  await expect(table.getByTestId("table-contract")).toHaveCount(0);
  // Its address asks for a session: without one it sends to sign-in, back to the order page after.
  const signedOut = await page.request.get(`/orders/${account.delivered.id}/tables/prices/contract`, {
    maxRedirects: 0,
  });
  expect(signedOut.status()).toBe(302);
  expect(signedOut.headers().location).toMatch(/\/signin\?callbackUrl=%2Forders%2Ford_/);
  await table.getByRole("button", { name: "Preview prices, version 3" }).click();
  const preview = page.getByRole("dialog", { name: "Preview of prices, version 3" });
  await expect(preview.getByTestId("preview-summary")).toHaveText("The first 20 of 40 rows.");
  await expectNoAxeViolations(page, "share page, table preview open");
});

test("a table's description, data dictionary, freshness, lateness and data contract, desktop and phone", async ({
  page,
}) => {
  const account = await buyerWithPriceTable("e2e-table-promises", 1);
  const orderId = account.delivered.id;
  await describeTable(orderId, "prices", {
    description: "Shelf prices of every listed product, refreshed each morning.",
    columns: [{ name: "price", description: "Price in euros, VAT included.", unit: "EUR", example: "19.99" }],
  });
  await setCadence(orderId, "prices", { every: "1d" }); // grace: a quarter of it, 6 hours
  const { id: tableId } = await db().orderTable.findFirstOrThrow({ where: { orderId, name: "prices" } });
  const made = await db().tableVersion.findFirstOrThrow({ where: { tableId, version: 1 } });
  const expectedBy = new Date(made.createdAt.getTime() + 30 * 3_600_000);

  await signIn(page, account.email);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto(`/orders/${orderId}`);
    const table = page.getByTestId("table-row").filter({ hasText: "prices" });
    await expect(table.getByTestId("table-description")).toHaveText(
      "Shelf prices of every listed product, refreshed each morning.",
    );
    await expect(table.getByTestId("table-freshness")).toHaveText(
      `Refreshed every day (grace 6 hours); next version expected by ${formatDate(expectedBy)}.`,
    );
    await expect(table.getByTestId("table-freshness")).not.toHaveAttribute("data-late");
    const dictionary = table.getByTestId("data-dictionary");
    await dictionary.getByText("Data dictionary (3 columns, 1 described)").click();
    const price = dictionary.getByTestId("dictionary-column").filter({ hasText: /^price/ });
    await expect(price.getByTestId("column-description")).toHaveText("Price in euros, VAT included.");
    await expect(price.getByTestId("column-unit")).toHaveText("Unit: EUR");
    await expect(price).toContainText("Example: 19.99");
    await expect(dictionary.getByTestId("dictionary-column").filter({ hasText: /^sku/ })).toContainText(
      "Not described yet.",
    );
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await expectNoAxeViolations(page, `order page with a data dictionary open at ${width} px`);

    // The contract downloads as an attachment named for the table: the ODCS document with its dictionary.
    const [yaml] = await Promise.all([
      page.waitForEvent("download"),
      table.getByRole("link", { name: "Download the data contract of prices as YAML" }).click(),
    ]);
    expect(yaml.suggestedFilename()).toBe("prices.odcs.yaml");
    const text = await fs.readFile((await yaml.path())!, "utf8");
    expect(text.startsWith("apiVersion: v3.1.0\n")).toBe(true);
    expect(text).toMatch(/^name: prices$/m);
    expect(text).toContain("Price in euros, VAT included.");
    const [json] = await Promise.all([
      page.waitForEvent("download"),
      table.getByRole("link", { name: "Download the data contract of prices as JSON" }).click(),
    ]);
    expect(json.suggestedFilename()).toBe("prices.odcs.json");
    expect(JSON.parse(await fs.readFile((await json.path())!, "utf8"))).toMatchObject({ name: "prices" });
    await screenshot(page, width === 390 ? "table-promises-phone" : "table-promises-desktop");
  }

  // Another buyer's table is no contract of this buyer's: the same 404 as any order not theirs.
  const other = await buyer("e2e-table-promises-other");
  const theirs = await order(other.id, { name: "Someone else's prices", status: "delivered" });
  await db().orderTable.create({ data: { orderId: theirs.id, name: "prices" } });
  for (const [address, said] of [
    [`/orders/${theirs.id}/tables/prices/contract`, "No such order or table here."],
    [`/orders/${orderId}/tables/nope/contract`, "No such order or table here."],
    [`/orders/${orderId}/tables/prices/contract?format=xml`, "No such format here: ask for yaml or json."],
  ] as const) {
    const refused = await page.request.get(address);
    expect(refused.status(), address).toBe(404);
    expect(await refused.text()).toBe(said);
  }

  // A day and a half later with no new version the table is late: said in words, not by colour alone.
  await db().tableVersion.update({
    where: { tableId_version: { tableId, version: 1 } },
    data: { createdAt: new Date(made.createdAt.getTime() - 2 * 86_400_000) },
  });
  const dueBefore = new Date(expectedBy.getTime() - 2 * 86_400_000);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto(`/orders/${orderId}`);
    const freshness = page.getByTestId("table-row").filter({ hasText: "prices" }).getByTestId("table-freshness");
    await expect(freshness).toHaveText(
      `Late: the next version was expected by ${formatDate(dueBefore)} and has not come yet. Refreshed every day (grace 6 hours).`,
    );
    await expect(freshness).toHaveAttribute("data-late", "true");
    await expectNoAxeViolations(page, `order page with a late table at ${width} px`);
  }
  await screenshot(page, "table-late-phone");
});
