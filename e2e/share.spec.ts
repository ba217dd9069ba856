import { promises as fs } from "node:fs";
import { buyerWithOrders, expect, screenshot, sha256, signIn, test } from "./helpers";

test("a share link opens one order to anyone, and nothing else, until it is revoked", async ({ page, browser }) => {
  const account = await buyerWithOrders("e2e-share");
  const stranger = await buyerWithOrders("e2e-share-other");
  await signIn(page, account.email);
  await page.goto(`/orders/${account.delivered.id}`);
  await page.getByLabel("For whom (optional)").fill("for Acme finance");
  await expect(page.getByTestId("share-label-count")).toHaveText("16/100");
  await page.getByLabel("Link expires").selectOption("7");
  await page.getByRole("button", { name: "Create share link" }).click();
  const created = page.getByRole("dialog", { name: "Share link created" });
  const url = (await created.getByTestId("new-share-url").textContent())!.trim();
  expect(url).toMatch(/\/share\/dsl_[A-Za-z0-9_-]{43}$/);
  await screenshot(page, "share-link-created");
  await created.getByRole("button", { name: "Done" }).click();
  await expect(page.getByTestId("share-link-row")).toContainText("Active");
  await expect(page.getByTestId("share-link-row")).toContainText("for Acme finance");
  await expect(page.getByTestId("share-link-activity")).toHaveText("not opened yet · 0 downloads");
  const token = url.split("/share/")[1]!;

  // A fresh browser, never signed in.
  const guest = await browser.newContext({ baseURL: process.env.E2E_BASE_URL });
  const guestPage = await guest.newPage();
  const opened = await guestPage.goto(url);
  expect(opened?.headers()["referrer-policy"]).toBe("no-referrer");
  await expect(guestPage.getByRole("heading", { name: "e2e-share: product catalogue" })).toBeVisible();
  await expect(guestPage).toHaveTitle("e2e-share: product catalogue (shared) · Dataset Access");
  await expect(guestPage.getByTestId("file-row")).toHaveCount(2);
  await expect(guestPage.getByTestId("shared-by")).toContainText(`Shared with you by ${account.email}.`);
  await expect(guestPage.getByTestId("shared-by")).toContainText("This link works until");
  // Someone without an account is not pushed to sign in.
  await expect(guestPage.getByRole("link", { name: "Sign in" })).toHaveCount(0);
  await screenshot(guestPage, "shared-order");
  const downloading = guestPage.waitForEvent("download");
  await guestPage.getByRole("link", { name: "Download reviews.zip" }).click();
  const bytes = await fs.readFile((await (await downloading).path())!);
  expect(sha256(bytes)).toBe(sha256(account.deliveredFiles["reviews.zip"]));

  // The token is not an API key, and opens no other order: not the buyer's, not anyone else's.
  const asKey = await guest.request.get("/api/v1/orders", { headers: { Authorization: `Bearer ${token}` } });
  expect(asKey.status()).toBe(401);
  expect((await asKey.json()).code).toBe("invalid_api_key");
  for (const other of [account.refunded, stranger.delivered]) {
    const attempt = await guest.request.get(`/share/${token}/files/${other.files[0]!.id}`, { maxRedirects: 0 });
    expect(attempt.status()).toBe(404);
  }
  await guestPage.goto("/orders");
  await expect(guestPage).toHaveURL(/\/signin/);
  // The owner sees the link was opened and used.
  await page.reload();
  await expect(page.getByTestId("share-link-activity")).toHaveText(/^opened 1 time, last just now · 1 download$/);

  // Revoked: the page and the downloads refuse it at once.
  await page.getByRole("button", { name: /^Revoke share link/ }).click();
  await page
    .getByRole("dialog", { name: "Revoke this share link?" })
    .getByRole("button", { name: "Revoke link" })
    .click();
  await expect(page.getByTestId("share-link-row")).toContainText("Revoked");
  await guestPage.goto(url);
  await expect(guestPage.getByRole("heading", { name: "This share link does not work" })).toBeVisible();
  await expect(guestPage.getByText("e2e-share: product catalogue")).toHaveCount(0);
  await expect(guestPage.getByTestId("share-unavailable-reason")).toHaveText(/^It was revoked on /);
  // A download started from a page opened before the revocation lands on that explanation too.
  await guestPage.goto(`/share/${token}/files/${account.delivered.files[0]!.id}`);
  await expect(guestPage).toHaveURL(new RegExp(`/share/${token}$`));
  await expect(guestPage.getByRole("heading", { name: "This share link does not work" })).toBeVisible();
  await guest.close();

  // The owner's security log: created, opened (one row counting the opens), revoked.
  await page.goto("/security");
  const events = page.getByTestId("security-event");
  await expect(events.filter({ hasText: "Share link created" })).toContainText("e2e-share: product catalogue");
  await expect(events.filter({ hasText: "Share link opened" })).toHaveCount(1);
  // Opened by the link's holder: the link, by its label, not "System".
  await expect(events.filter({ hasText: "Share link opened" })).toContainText("Share link “for Acme finance”");
  await expect(events.filter({ hasText: "Share link created" })).toContainText(/expires \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  await expect(events.filter({ hasText: "Share link revoked" })).toHaveCount(1);
});

test("the getting-started page shows how to call the API", async ({ page }) => {
  await page.goto("/getting-started");
  await expect(page.getByRole("heading", { name: "Getting started with the API" })).toBeVisible();
  // The download step (the formats step shows a second curl --fail -L -OJ).
  await expect(
    page.getByText(/curl --fail -L -OJ -H "Authorization: Bearer \$DATASET_ACCESS_KEY"/).first(),
  ).toBeVisible();
  await page.getByRole("link", { name: "API reference" }).last().click();
  await expect(page).toHaveURL(/\/docs\/api$/);
  await screenshot(page, "getting-started-api-reference");
});

test("a share link cannot be made for a refunded or unfinished order", async ({ page }) => {
  const account = await buyerWithOrders("e2e-share-refunded");
  await signIn(page, account.email);
  for (const order of [account.refunded, account.unfinished]) {
    await page.goto(`/orders/${order.id}`);
    await expect(page.getByTestId("not-shareable")).toContainText("delivered orders only");
    await expect(page.getByRole("button", { name: "Create share link" })).toHaveCount(0);
  }
});
