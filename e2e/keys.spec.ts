import { promises as fs } from "node:fs";
import { API_KEY_EXPIRY_DAYS } from "../lib/keys";
import { buyerWithOrders, expect, expectNoAxeViolations, screenshot, signIn, test } from "./helpers";

const day = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

test("a key's secret is shown once, works with the API, and stops working when revoked", async ({ page, request }) => {
  const account = await buyerWithOrders("e2e-keys");
  await signIn(page, account.email);
  await page.getByRole("link", { name: "API keys" }).click();
  await expect(page.getByText("No keys yet")).toBeVisible();

  await page.getByRole("button", { name: "Create key" }).click();
  const form = page.getByRole("dialog", { name: "Create an API key" });
  await expect(form.getByLabel("scrape:read", { exact: false })).toBeDisabled();
  await form.getByLabel("Name").fill("warehouse-sync");
  await form.getByLabel("90 days").check();
  await form.getByRole("button", { name: "Create key" }).click();

  const shown = page.getByRole("dialog", { name: "Copy your new API key" });
  await expect(shown.getByText("This is the only time the key is shown.")).toBeVisible();
  const secret = (await shown.getByTestId("new-key-secret").textContent())!.trim();
  expect(secret).toMatch(/^dak_[0-9A-Za-z]{38}$/);
  await screenshot(page, "key-secret-shown-once");

  // The same key as a Delta Sharing profile file, made in the browser while the secret is shown.
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    shown.getByRole("button", { name: "Download sharing profile" }).click(),
  ]);
  expect(download.suggestedFilename()).toBe("dataset-access.share");
  const profile = JSON.parse(await fs.readFile((await download.path())!, "utf8"));
  expect(profile).toEqual({
    shareCredentialsVersion: 1,
    endpoint: `${new URL(page.url()).origin}/api/delta-sharing`,
    bearerToken: secret,
    expirationTime: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
  });
  // 90 days from now, as chosen.
  expect(Math.abs(Date.parse(profile.expirationTime) - (Date.now() + 90 * 86_400_000))).toBeLessThan(600_000);
  const shares = await request.get(`${profile.endpoint}/shares`, {
    headers: { Authorization: `Bearer ${profile.bearerToken}` },
  });
  expect(await shares.json()).toMatchObject({ items: [{ name: "orders" }] });
  await shown.getByRole("button", { name: "I have stored it" }).click();

  const row = page.getByTestId("key-row").filter({ hasText: "warehouse-sync" });
  await expect(row.getByTestId("key-status")).toHaveText("Active");
  await expect(row).toContainText(`${secret.slice(0, 8)}…${secret.slice(-4)}`);
  await page.reload();
  expect(await page.content()).not.toContain(secret);
  await screenshot(page, "keys");

  const api = (key: string) =>
    request.get("/api/v1/orders", { headers: { Authorization: `Bearer ${key}` }, maxRedirects: 0 });
  const listed = await api(secret);
  expect(listed.status()).toBe(200);
  const ids = ((await listed.json()) as { data: { id: string }[] }).data.map((order) => order.id);
  expect(ids).toEqual([account.delivered.id, account.refunded.id, account.unfinished.id]);

  // The usage chart counts what the key just did (written within seconds): the Delta Sharing
  // request above, a 200 and a 404.
  const missing = await request.get("/api/v1/orders/ord_00000000000000000000000000000000", {
    headers: { Authorization: `Bearer ${secret}` },
  });
  expect(missing.status()).toBe(404);
  const usage = page.getByTestId("key-usage").filter({ hasText: "warehouse-sync" });
  await expect
    .poll(
      async () => {
        await page.reload();
        return usage.getByTestId("requests-24h").textContent();
      },
      { timeout: 20_000, intervals: [1_000] },
    )
    .toBe("3");
  await expect(usage.getByTestId("usage-chart")).toHaveAttribute("data-total", "3");
  // A date axis and a count scale under the bars.
  const bars = usage.getByTestId("daily-bars");
  await expect(bars).toContainText(/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}/);
  await expect(bars).toContainText("3");
  await usage.getByText("Show the numbers").click();
  await expect(usage.getByRole("row").filter({ hasText: day(0) })).toContainText("1");
  await screenshot(page, "keys-usage");

  await row.getByRole("button", { name: "Revoke warehouse-sync" }).click();
  const confirm = page.getByRole("dialog", { name: "Revoke “warehouse-sync”?" });
  await confirm.getByRole("button", { name: "Revoke key" }).click();
  await expect(row.getByTestId("key-status")).toHaveText("Revoked");
  const refused = await api(secret);
  expect(refused.status()).toBe(401);
  expect((await refused.json()).code).toBe("revoked_api_key");
  // A revoked key offers nothing more to do with it (Create key makes a new one), at either width.
  await expect(row.getByRole("button", { name: "Replace warehouse-sync" })).toHaveCount(0);
  await expect(row.getByRole("button", { name: "Revoke warehouse-sync" })).toHaveCount(0);
  await page.setViewportSize({ width: 390, height: 844 });
  const card = page.getByTestId("key-card").filter({ hasText: "warehouse-sync" });
  await expect(card).toContainText("Revoked");
  await expect(card.getByRole("button", { name: /^(Replace|Revoke)/ })).toHaveCount(0);
  await expectNoAxeViolations(page, "/keys at phone width, a revoked key");
  await page.setViewportSize({ width: 1280, height: 720 });

  // The security log has this test's sign-in, the key's creation and its revocation, and exports as CSV.
  await page.getByRole("link", { name: "Security log" }).click();
  const events = page.getByTestId("security-event");
  await expect(events.filter({ hasText: "Key revoked" })).toContainText("warehouse-sync");
  await expect(events.filter({ hasText: "Key created" })).toContainText("warehouse-sync");
  await expect(events.filter({ hasText: "Signed in" })).toHaveCount(1);
  await expect(events.first()).toContainText("You (dashboard)");
  await screenshot(page, "security-log");
  await page.getByLabel("Show").selectOption({ label: "Key revoked" });
  await page.getByRole("button", { name: "Filter" }).click();
  await expect(page).toHaveURL(/\/security\?kind=key_revoked$/);
  await expect(events).toHaveCount(1);

  const exported = await page.request.get("/security/export");
  expect(exported.status()).toBe(200);
  expect(exported.headers()["content-type"]).toContain("text/csv");
  const rows = (await exported.text())
    .trim()
    .split("\r\n")
    .map((line) => [...line.matchAll(/"((?:[^"]|"")*)"/g)].map((match) => match[1]!.replace(/""/g, '"')));
  expect(rows[0]).toEqual(["time", "event", "detail", "actor", "ip", "count", "last"]);
  expect(rows.slice(1).map((row) => row[1])).toEqual(["key_revoked", "key_created", "sign_in"]);
  for (const row of rows.slice(1)) expect(row).toHaveLength(7);
});

test("keys of each expiry, and a replacement that revokes the old key", async ({ page, request }) => {
  const account = await buyerWithOrders("e2e-expiry");
  await signIn(page, account.email);
  await page.goto("/keys");
  for (const days of API_KEY_EXPIRY_DAYS) {
    await page.getByRole("button", { name: "Create key" }).click();
    const form = page.getByRole("dialog", { name: "Create an API key" });
    await form.getByLabel("Name").fill(`key-${days}d`);
    await form.getByLabel(`${days} days`).check();
    await form.getByRole("button", { name: "Create key" }).click();
    await page
      .getByRole("dialog", { name: "Copy your new API key" })
      .getByRole("button", { name: "I have stored it" })
      .click();
    const row = page.getByTestId("key-row").filter({ hasText: `key-${days}d` });
    // Created now, expiring `days` later (the date may roll over while the test runs).
    await expect(row.locator("td").nth(3)).toContainText(new RegExp(`^(${day(days)}|${day(days + 1)})`));
    await expect(row.getByTestId("key-status")).toHaveText("Active");
  }
  // Keys not used yet: each chart says so, rather than showing an empty box.
  const unused = page.getByTestId("key-usage").filter({ hasText: "key-90d" });
  await expect(unused.getByTestId("usage-chart")).toHaveAttribute("data-total", "0");
  await expect(unused).toContainText("No requests yet in the last 30 days.");
  await screenshot(page, "keys-usage-empty");

  const old = page.getByTestId("key-row").filter({ hasText: "key-30d" });
  await old.getByRole("button", { name: "Replace key-30d" }).click();
  const replace = page.getByRole("dialog", { name: "Replace “key-30d”" });
  await replace.getByLabel("365 days").check();
  await replace.getByLabel("now (for a leaked key)").check();
  await replace.getByRole("button", { name: "Create replacement" }).click();
  const shown = page.getByRole("dialog", { name: "Copy your new API key" });
  const secret = (await shown.getByTestId("new-key-secret").textContent())!.trim();
  await shown.getByRole("button", { name: "I have stored it" }).click();
  const rows = page.getByTestId("key-row").filter({ hasText: "key-30d" });
  await expect(rows).toHaveCount(2);
  await expect(rows.getByTestId("key-status")).toHaveText(["Active", "Revoked"]);
  await expect(rows.first().locator("td").nth(3)).toContainText(new RegExp(`^(${day(365)}|${day(366)})`));
  const response = await request.get("/api/v1/orders", { headers: { Authorization: `Bearer ${secret}` } });
  expect(response.status()).toBe(200);
});

test("a key mutation sent from another site is refused (CSRF)", async ({ page }) => {
  const account = await buyerWithOrders("e2e-csrf");
  await signIn(page, account.email);
  await page.goto("/keys");
  // The page's own request to create a key, captured to be replayed as a forged one.
  const actionRequest = page.waitForRequest(
    (request) => request.method() === "POST" && !!request.headers()["next-action"],
  );
  await page.getByRole("button", { name: "Create key" }).click();
  const form = page.getByRole("dialog", { name: "Create an API key" });
  await form.getByLabel("Name").fill("genuine");
  await form.getByRole("button", { name: "Create key" }).click();
  await page
    .getByRole("dialog", { name: "Copy your new API key" })
    .getByRole("button", { name: "I have stored it" })
    .click();
  const genuine = await actionRequest;

  // Same cookies, same action and body, but from another origin, as a cross-site form or script would send it.
  const headers: Record<string, string> = { ...genuine.headers(), origin: "https://evil.example" };
  delete headers["content-length"];
  const forged = await page.request.post(genuine.url(), { headers, data: genuine.postDataBuffer()! });
  expect(forged.ok()).toBe(false);
  await page.reload();
  await expect(page.getByTestId("key-row")).toHaveCount(1);
});
