import { promises as fs } from "node:fs";
import type { Page } from "@playwright/test";
import { db } from "../lib/db/client";
import { createShareLink, revokeShareLink } from "../lib/share-links";
import {
  buyerWithDataOrder,
  expect,
  expectNoAxeViolations,
  PRODUCTS,
  screenshot,
  sha256,
  signIn,
  test,
} from "./helpers";

// Signing in and waiting for the job worker to profile the files (it polls every 5 s) take a while.
test.describe.configure({ timeout: 150_000 });

/**
 * The preview of the products table (its one part, products.csv, has none of its own: one Preview a
 * table) shows the first 20 products, in the file's column order, as the profile read them.
 */
async function expectFirstProducts(page: Page) {
  const dialog = page.getByRole("dialog", { name: "Preview of products, version 1" });
  await expect(dialog.getByTestId("preview-summary")).toHaveText("The first 20 of 120 rows.");
  const table = dialog.getByRole("table");
  await expect(table.getByRole("columnheader")).toHaveText(
    Object.keys(PRODUCTS[0]!).map((name) => new RegExp(`^${name}`)),
  );
  await expect(table.getByRole("columnheader", { name: "listed_at TIMESTAMP" })).toHaveCount(1);
  const rows = table.locator("tbody tr");
  await expect(rows).toHaveCount(20);
  for (const index of [0, 1, 19]) {
    const product = PRODUCTS[index]!;
    await expect(rows.nth(index).getByRole("cell")).toHaveText([
      String(product.id),
      product.name,
      product.category,
      String(product.price),
      String(product.in_stock),
      product.listed_at.replace(" ", "T"),
      product.description,
      product.note ?? "null",
    ]);
  }
}

test("a buyer previews a data file, sees its columns and downloads it as Parquet and JSON Lines", async ({ page }) => {
  const account = await buyerWithDataOrder("e2e-preview");
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);

  const products = page.getByTestId("file-row").filter({ hasText: "products.csv" });
  await expect(products.getByTestId("file-profile")).toContainText("CSV · 120 rows");
  await products.getByText("8 columns").click();
  const columns = products.getByTestId("file-columns").getByRole("listitem");
  await expect(columns).toHaveCount(8);
  await expect(columns.first()).toHaveText("id BIGINT");
  await expect(columns.last()).toHaveText("note VARCHAR nullable");
  // A CSV that cannot be read fails its publication, which no buyer sees; a binary file has no data to show.
  await expect(page.getByTestId("file-row").filter({ hasText: "ragged.csv" })).toHaveCount(0);
  const binary = page.getByTestId("file-row").filter({ hasText: "photos.bin" });
  await expect(binary.getByTestId("file-profile")).toHaveCount(0);
  await expect(binary.getByRole("button", { name: /^Preview/ })).toHaveCount(0);
  await expect(binary.getByRole("link", { name: /as Parquet$/ })).toHaveCount(0);

  // By keyboard: the dialog takes the focus, Escape closes it and gives the focus back.
  const previewButton = page.getByRole("button", { name: "Preview products, version 1" });
  await previewButton.focus();
  await page.keyboard.press("Enter");
  const dialog = page.getByRole("dialog", { name: "Preview of products, version 1" });
  await expect(dialog).toBeVisible();
  await expectFirstProducts(page);
  expect(await dialog.evaluate((element) => element.contains(document.activeElement))).toBe(true);
  await expectNoAxeViolations(page, "order page, preview open");
  await screenshot(page, "preview-desktop");
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await expect(previewButton).toBeFocused();
  await screenshot(page, "order-data-files-desktop");

  // Parquet was made when the file was profiled: the download is its rendition, byte for byte.
  const fileId = account.delivered.files.find((file) => file.name === "products.csv")!.id;
  const parquet = await db().fileRendition.findUniqueOrThrow({
    where: { fileId_format: { fileId, format: "parquet" } },
  });
  const downloading = page.waitForEvent("download");
  await products.getByRole("link", { name: /^Download products\.csv as Parquet/ }).click();
  const download = await downloading;
  expect(download.suggestedFilename()).toBe("products.parquet");
  const bytes = await fs.readFile((await download.path())!);
  expect(bytes.length).toBe(Number(parquet.size));
  expect(sha256(bytes)).toBe(parquet.sha256);

  // JSON Lines is made on first request: the click waits in place (the route's 202 and Retry-After),
  // saying so, and the download starts once it is made; the page is not reloaded.
  await expect(products.getByRole("button", { name: /^Preview/ })).toHaveCount(0);
  await page.evaluate(() => ((window as { kept?: boolean }).kept = true));
  const retrying = page.waitForEvent("download", { timeout: 90_000 });
  await products.getByRole("link", { name: "Download products.csv as JSON Lines" }).click();
  await expect(products.getByTestId("download-preparing").filter({ hasText: /\S/ })).toHaveText(
    "Being prepared: the download starts when it is ready.",
  );
  await expectNoAxeViolations(page, "order page, a rendition being prepared");
  await screenshot(page, "rendition-preparing");
  const jsonl = await retrying;
  expect(page.url()).toMatch(new RegExp(`/orders/${account.delivered.id}$`));
  expect(await page.evaluate(() => (window as { kept?: boolean }).kept)).toBe(true);
  expect(jsonl.suggestedFilename()).toBe("products.jsonl");
  const lines = (await fs.readFile((await jsonl.path())!, "utf8")).trim().split("\n");
  expect(lines).toHaveLength(PRODUCTS.length);
  expect(JSON.parse(lines[0]!)).toMatchObject({ id: 1, name: "Product 1" });
});

test("on a phone the preview's table scrolls inside its box, never the page", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  const account = await buyerWithDataOrder("e2e-preview-phone");
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);
  const pageOverflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(await pageOverflow(), "the order page is wider than the screen").toBeLessThanOrEqual(0);
  await screenshot(page, "phone-order-data-files");

  await expect(page.getByRole("button", { name: "Preview products, version 1" })).toBeVisible();
  await page.getByRole("button", { name: "Preview products, version 1" }).click();
  await expectFirstProducts(page);
  const box = page.getByRole("dialog").getByRole("region");
  const { scrollWidth, clientWidth } = await box.evaluate((element) => ({
    scrollWidth: element.scrollWidth,
    clientWidth: element.clientWidth,
  }));
  expect(scrollWidth).toBeGreaterThan(clientWidth);
  expect((await box.boundingBox())!.width).toBeLessThanOrEqual(390);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await expectNoAxeViolations(page, "order page on a phone, preview open");
  await screenshot(page, "phone-preview");
  // The box scrolls by keyboard too.
  await box.focus();
  await page.keyboard.press("ArrowRight");
  await expect.poll(() => box.evaluate((element) => element.scrollLeft)).toBeGreaterThan(0);
});

test("a share link shows the same preview, for its own order only while it works", async ({ browser }) => {
  const account = await buyerWithDataOrder("e2e-preview-share");
  const link = await createShareLink({ buyerId: account.id, orderId: account.delivered.id, expiry: 7 });
  const guest = await browser.newContext({ baseURL: process.env.E2E_BASE_URL });
  const [first, second] = [await guest.newPage(), await guest.newPage()];
  for (const opened of [first, second]) await opened.goto(`/share/${link.token}`);

  await expect(first.getByRole("button", { name: "Preview products, version 1" })).toBeVisible();
  await first.getByRole("button", { name: "Preview products, version 1" }).click();
  await expectFirstProducts(first);
  await expectNoAxeViolations(first, "share page, preview open");
  await screenshot(first, "shared-preview");
  await first.keyboard.press("Escape");

  // Its downloads in other formats: Parquet at once, JSON Lines once made (back to the share page till then).
  const fileId = account.delivered.files.find((file) => file.name === "products.csv")!.id;
  const downloading = first.waitForEvent("download");
  await first.getByRole("link", { name: /^Download products\.csv as Parquet/ }).click();
  const parquet = await db().fileRendition.findUniqueOrThrow({
    where: { fileId_format: { fileId, format: "parquet" } },
  });
  expect(sha256(await fs.readFile((await (await downloading).path())!))).toBe(parquet.sha256);
  const files = `/share/${link.token}/files/${fileId}`;
  const pending = await guest.request.get(`${files}?format=jsonl`, { maxRedirects: 0 });
  expect(pending.status()).toBe(303);
  expect(pending.headers().location).toMatch(new RegExp(`/share/${link.token}\\?preparing=${fileId}&format=jsonl$`));
  expect((await guest.request.get(`${files}?format=xlsx`, { maxRedirects: 0 })).status()).toBe(404);
  // The page's own script asks for JSON and gets the API's answers: 202 with Retry-After while it is
  // being made (asked a moment after the first request: the worker has not made it yet), then the
  // signed link to start the download from (the CSV is the file itself, so it is ready at once).
  const json = { headers: { Accept: "application/json" }, maxRedirects: 0 };
  const waiting = await guest.request.get(`${files}?format=jsonl`, json);
  expect(waiting.status()).toBe(202);
  expect(waiting.headers()["retry-after"]).toBe("5");
  expect((await waiting.json()).code).toBe("rendition_pending");
  const ready = await guest.request.get(`${files}?format=csv`, json);
  expect(ready.status()).toBe(200);
  const { url } = (await ready.json()) as { url: string };
  expect((await guest.request.get(url)).ok()).toBe(true);

  // Revoked while the second page is open: its preview is refused, not shown.
  await revokeShareLink(account.id, link.id);
  await second.getByRole("button", { name: "Preview products, version 1" }).click();
  const refused = second.getByRole("dialog", { name: "Preview of products, version 1" });
  await expect(refused.getByRole("alert")).toHaveText("This share link no longer works. Reload the page to see why.");
  await expect(refused.getByRole("table")).toHaveCount(0);
  await guest.close();
});
