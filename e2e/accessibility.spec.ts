import { createShareLink } from "../lib/share-links";
import { apiKey } from "../tests/helpers/fixtures";
import { buyerWithOrders, expect, expectNoAxeViolations, screenshot, signIn, test } from "./helpers";

test("the dashboard reads on a phone without sideways scrolling", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  const account = await buyerWithOrders("e2e-phone");
  await apiKey(account.id);
  await signIn(page, account.email);
  for (const [path, name] of [
    ["/orders", "phone-orders"],
    [`/orders/${account.delivered.id}`, "phone-order"],
    ["/keys", "phone-keys"],
    ["/webhooks", "phone-webhooks"],
    ["/security", "phone-security-log"],
    ["/getting-started", "phone-getting-started"],
    ["/docs/api", "phone-api-reference"],
  ] as const) {
    await page.goto(path);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `${path} is wider than the screen`).toBeLessThanOrEqual(0);
    await screenshot(page, name);
  }
  // The reference's copy buttons sit above the code, never over it, and its examples scroll by keyboard.
  await page.goto("/docs/api");
  const example = page.locator("#getOrder");
  const copy = await example.getByRole("button", { name: "Copy request" }).boundingBox();
  const code = await example.locator("pre").first().boundingBox();
  expect(copy!.y + copy!.height).toBeLessThanOrEqual(code!.y);
  await expect(example.locator("pre").first()).toHaveAttribute("tabindex", "0");
  // The header is one row (the name and a Menu button); the menu lists the sections, the current one marked.
  await page.goto("/keys");
  const brand = await page.getByRole("link", { name: "Dataset Access" }).boundingBox();
  const menu = page.getByRole("button", { name: "Menu" });
  const menuBox = await menu.boundingBox();
  expect(Math.abs(brand!.y + brand!.height / 2 - (menuBox!.y + menuBox!.height / 2))).toBeLessThan(8);
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await menu.click();
  const phoneNav = page.getByRole("navigation", { name: "Main" });
  await expect(phoneNav.getByRole("link")).toHaveText([
    "Orders",
    "API keys",
    "Webhooks",
    "Exports",
    "Security log",
    "Getting started",
    "API reference",
  ]);
  await expect(phoneNav.getByRole("link", { name: "API keys" })).toHaveAttribute("aria-current", "page");
  await screenshot(page, "phone-menu");
  await phoneNav.getByRole("link", { name: "Orders" }).click();
  await expect(page).toHaveURL(/\/orders$/);
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  // On the keys page every key is a card whose actions are on screen, not off to the right.
  await page.goto("/keys");
  const card = page.getByTestId("key-card");
  await expect(card).toHaveCount(1);
  for (const action of [/^Replace/, /^Revoke/]) {
    const box = await card.getByRole("button", { name: action }).boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
  }
});

test("a key can be created with the keyboard alone", async ({ page }) => {
  const account = await buyerWithOrders("e2e-keyboard");
  await signIn(page, account.email);
  await page.goto("/keys");
  await page.getByRole("button", { name: "Create key" }).focus();
  await page.keyboard.press("Enter");
  const form = page.getByRole("dialog", { name: "Create an API key" });
  await expect(form.getByLabel("Name")).toBeFocused();
  // An empty name is refused next to the field, which keeps the focus; typing clears the error.
  await page.keyboard.press("Enter");
  await expect(form.getByTestId("key-name-error")).toHaveText("Give the key a name, e.g. where it is used.");
  await expect(form.getByLabel("Name")).toBeFocused();
  await expect(form.getByLabel("Name")).toHaveAttribute("aria-invalid", "true");
  await page.keyboard.type("keyboard-only");
  await expect(form.getByTestId("key-name-error")).toHaveCount(0);
  await expect(form.getByTestId("key-name-count")).toHaveText("13/100");
  await page.keyboard.press("Enter");
  const shown = page.getByRole("dialog", { name: "Copy your new API key" });
  await expect(shown.getByTestId("new-key-secret")).toHaveText(/^dak_/);
  // The secret cannot be shown again, so Escape does not close its dialog: only the button does.
  await page.keyboard.press("Escape");
  await expect(shown).toBeVisible();
  await expect(shown.getByRole("button", { name: "Copy API key" })).toBeFocused();
  // Next come the sharing profile's download and its "how" link, then the close button.
  await page.keyboard.press("Tab");
  await expect(shown.getByRole("button", { name: "Download sharing profile" })).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(shown.getByRole("link", { name: "how" })).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(shown.getByRole("button", { name: "I have stored it" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(shown).toBeHidden();
  await expect(page.getByRole("button", { name: "Create key" })).toBeFocused();
  await expect(page.getByTestId("key-row").filter({ hasText: "keyboard-only" })).toHaveCount(1);
});

test("every page passes an axe-core check (WCAG 2.1 A and AA)", async ({ page }) => {
  const account = await buyerWithOrders("e2e-axe");
  await apiKey(account.id);
  const pages = [
    "/signin",
    "/getting-started",
    "/docs/api",
    "/orders",
    `/orders/${account.delivered.id}`,
    `/orders/${account.refunded.id}`,
    "/keys",
    "/webhooks",
    "/security",
  ];
  const check = async (path: string) => {
    await page.goto(path);
    await expectNoAxeViolations(page, path);
  };
  const share = await createShareLink({ buyerId: account.id, orderId: account.delivered.id, expiry: 7 });
  await check("/");
  await check("/signin");
  await check(`/share/${share.token}`);
  await signIn(page, account.email);
  for (const path of pages.slice(1)) {
    await check(path);
    if (path === "/docs/api") await screenshot(page, "api-reference");
    if (path === "/security") await screenshot(page, "security-log-desktop");
  }
});
