import { Readable } from "node:stream";
import { db } from "../lib/db/client";
import { createShareLink } from "../lib/share-links";
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

/** A buyer's delivered order with a keyed price table refreshed twice: three versions made by the server's worker. */
async function buyerWithPriceTable(label: string) {
  const account = await buyer(label);
  const delivered = await order(account.id, { name: `${label}: weekly prices`, status: "delivered" });
  for (let week = 1; week <= 3; week++) {
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
    if (table.currentVersion === 3 && table.versions.every((version) => version.changeFileId)) break;
    if (Date.now() > deadline) {
      throw new Error(`The price table did not reach version 3 within 120 s: ${await workerStateOf(delivered.id)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return { ...account, delivered };
}

test("a buyer sees a table's versions, what each changed, previews it and its changes", async ({ page }) => {
  const account = await buyerWithPriceTable("e2e-tables");
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);

  const table = page.getByTestId("table-row").filter({ hasText: "prices" });
  await expect(table.getByTestId("table-version")).toHaveText("3");
  await expect(table).toContainText("40"); // rows as of version 3
  await expect(table).toContainText("snapshot");
  // The table lists its current part, which says whose part it is and downloads as itself and in other formats;
  // the older parts are in the history, and no plain file list repeats it.
  await expect(page.getByTestId("file-row")).toHaveText([/prices-week-3\.csv/]);
  const part = table.getByTestId("table-parts").getByTestId("file-row");
  await expect(part.getByTestId("file-table")).toHaveText("Part of table prices, version 3");
  await expect(part.getByRole("link", { name: "Download prices-week-3.csv", exact: true })).toBeVisible();
  await expect(part.getByRole("link", { name: /^Download prices-week-3\.csv as Parquet/ })).toBeVisible();
  await expect(page.getByRole("heading", { name: /Files$/ })).toHaveCount(0);

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
  await expectNoAxeViolations(page, "change preview open");
  await screenshot(page, "change-preview-desktop");
  await page.keyboard.press("Escape");

  // The change file downloads as Parquet at once; CSV is made on first request, then downloads.
  const [parquet] = await Promise.all([
    page.waitForEvent("download"),
    versions.nth(1).getByRole("link", { name: "Download changes of prices version 2 as Parquet" }).click(),
  ]);
  expect((await parquet.path()) && (await parquet.createReadStream()) !== null).toBe(true);
  const csvLink = versions.nth(1).getByRole("link", { name: "Download changes of prices version 2 as CSV" });
  const deadline = Date.now() + 60_000;
  for (;;) {
    await page.goto(`/orders/${account.delivered.id}`);
    await page.getByText(/^Version history/).click();
    const download = page.waitForEvent("download", { timeout: 5_000 }).catch(() => undefined);
    await csvLink.click();
    const csv = await download;
    if (csv) {
      const text = await new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        csv.createReadStream().then((stream) => {
          stream.on("data", (chunk: Buffer) => chunks.push(chunk));
          stream.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
          stream.on("error", reject);
        }, reject);
      });
      expect(text.split("\n")[0]).toBe("sku,title,price,_change_type");
      expect(text).toContain("SKU-41,Product 41,82,insert");
      break;
    }
    await expect(page.getByTestId("changes-preparing")).toContainText("prices version 2 as CSV are being prepared");
    if (Date.now() > deadline) throw new Error("The CSV of the changes was not made within 60 s");
  }

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
  await table.getByRole("button", { name: "Preview prices, version 3" }).click();
  const preview = page.getByRole("dialog", { name: "Preview of prices, version 3" });
  await expect(preview.getByTestId("preview-summary")).toHaveText("The first 20 of 40 rows.");
  await expectNoAxeViolations(page, "share page, table preview open");
});
