import { promises as fs } from "node:fs";
import { buyerWithOrders, expect, expectNoAxeViolations, screenshot, sha256, signIn, test } from "./helpers";

test("a buyer sees their orders and downloads a delivered file", async ({ page }) => {
  const account = await buyerWithOrders("e2e-orders");
  await signIn(page, account.email);
  const rows = page.getByTestId("order-row");
  await expect(rows).toHaveCount(3);
  await expect(rows.nth(0)).toContainText("Delivered");
  await expect(rows.nth(1)).toContainText("Refunded");
  await expect(rows.nth(2)).toContainText("Unfinished");
  await screenshot(page, "orders");
  // On a phone each row's status badge is as wide as its word, not the whole card.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [index, status] of [
    [0, "Delivered"],
    [1, "Refunded"],
    [2, "Unfinished"],
  ] as const) {
    const badge = rows.nth(index).getByText(status, { exact: true });
    expect((await badge.boundingBox())!.width, `${status} badge`).toBeLessThan(120);
  }
  await expectNoAxeViolations(page, "/orders at phone width");
  await page.setViewportSize({ width: 1280, height: 720 });

  await page.getByRole("link", { name: "e2e-orders: product catalogue" }).click();
  await expect(page).toHaveTitle("e2e-orders: product catalogue · Dataset Access");
  const file = page.getByTestId("file-row").filter({ hasText: "products.zip" });
  const expected = account.deliveredFiles["products.zip"];
  await expect(file.getByTestId("file-sha256")).toHaveText(sha256(expected));
  await expect(file).toContainText("48 KB");
  await screenshot(page, "order-delivered");

  const downloading = page.waitForEvent("download");
  await file.getByRole("link", { name: "Download products.zip" }).click();
  const download = await downloading;
  expect(download.suggestedFilename()).toBe("products.zip");
  // With STORAGE_DRIVER=s3 the bytes come straight from the store (a presigned URL), never through the app.
  expect(new URL(download.url()).origin).toBe(process.env.S3_ENDPOINT ?? new URL(page.url()).origin);
  const bytes = await fs.readFile((await download.path())!);
  expect(bytes.length).toBe(expected.length);
  expect(sha256(bytes)).toBe(sha256(expected));
});

test("a refunded order refuses downloads with a clear message", async ({ page }) => {
  const account = await buyerWithOrders("e2e-refunded");
  await signIn(page, account.email);
  await page.getByRole("link", { name: "e2e-refunded: refunded prices" }).click();
  await expect(page.getByTestId("not-downloadable")).toHaveText(
    "This order was refunded, so its files can no longer be downloaded.",
  );
  await expect(page.getByRole("button", { name: "Download unavailable" })).toBeDisabled();
  await expect(page.getByRole("link", { name: /^Download/ })).toHaveCount(0);
  await expect(page.getByTestId("refunded-on")).toHaveText(/^Refunded on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
  await expect(page.getByText("Delivered", { exact: true })).toHaveCount(0);
  await screenshot(page, "order-refunded");

  // Straight to the download address: no bytes, back to the order with the reason.
  const fileId = account.refunded.files[0]!.id;
  const response = await page.goto(`/orders/${account.refunded.id}/files/${fileId}`);
  expect(response?.url()).toMatch(new RegExp(`/orders/${account.refunded.id}\\?refused$`));
  await expect(page.getByTestId("download-refused")).toContainText("Download refused. This order was refunded");
  // One banner saying why, not two.
  await expect(page.getByTestId("not-downloadable")).toHaveCount(0);

  // An unfinished order says what happens next, in the dashboard's words (no API field names), at both widths.
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto(`/orders/${account.unfinished.id}`);
    await expect(page.getByTestId("what-next")).toHaveText(
      "Not delivered yet. The files appear here as they are added, and download once the order is delivered; this page then says when it was.",
    );
    await expectNoAxeViolations(page, `unfinished order page at ${width} px`);
  }
});

test("another buyer's order does not exist for this buyer", async ({ page }) => {
  const mine = await buyerWithOrders("e2e-tenant-a");
  const theirs = await buyerWithOrders("e2e-tenant-b");
  await signIn(page, mine.email);
  const response = await page.goto(`/orders/${theirs.delivered.id}`);
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("heading", { name: "Page not found" })).toBeVisible();
  const download = await page.request.get(`/orders/${theirs.delivered.id}/files/${theirs.delivered.files[0]!.id}`, {
    maxRedirects: 0,
  });
  expect(download.status()).toBe(404);
});
