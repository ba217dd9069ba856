import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { enableSocialAccess, importSocialProfiles } from "../lib/social/admin";
import { buyer } from "../tests/helpers/fixtures";
import { buyerWithOrders, expect, screenshot, signIn, test } from "./helpers";

test("an account without Social API access cannot make scrape:read keys", async ({ page }) => {
  const account = await buyerWithOrders("e2e-no-social");
  await signIn(page, account.email);
  await page.goto("/keys");
  await expect(page.getByTestId("social-access")).toContainText("Not enabled");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByRole("dialog", { name: "Create an API key" }).getByLabel(/scrape:read/)).toBeDisabled();
});

test("with Social API access: a scrape:read key reads a profile, and the dashboard shows the allowance", async ({
  page,
  request,
}) => {
  const account = await buyer("e2e-social");
  await enableSocialAccess(account.id, 500, 30);
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "e2e-social-")), "profiles.ndjson");
  await fs.writeFile(file, JSON.stringify({ platform: "youtube", handle: "@NASA", profile: { name: "NASA" } }));
  expect((await importSocialProfiles(file)).imported).toBe(1);

  await signIn(page, account.email);
  await page.goto("/keys");
  await expect(page.getByTestId("social-usage")).toContainText("0 of 500 profile reads used this month, 500 left");
  await page.getByRole("button", { name: "Create key" }).click();
  const form = page.getByRole("dialog", { name: "Create an API key" });
  await form.getByLabel("Name").fill("social-crawler");
  await form.getByLabel(/scrape:read/).check();
  await form.getByRole("button", { name: "Create key" }).click();
  const shown = page.getByRole("dialog", { name: "Copy your new API key" });
  const secret = (await shown.getByTestId("new-key-secret").textContent())!.trim();
  await shown.getByRole("button", { name: "I have stored it" }).click();

  const profile = await request.get("/api/v1/scrape/youtube/profile?handle=nasa", {
    headers: { Authorization: `Bearer ${secret}` },
  });
  expect(profile.status()).toBe(200);
  expect((await profile.json()).profile).toEqual({ name: "NASA" });
  expect(profile.headers()["social-allowance-remaining"]).toBe("499");
  const orders = await request.get("/api/v1/orders", { headers: { Authorization: `Bearer ${secret}` } });
  expect(orders.status()).toBe(403);

  await page.reload();
  await expect(page.getByTestId("social-usage")).toContainText("1 of 500 profile reads used this month, 499 left");
  // Today's bar in the month's chart of reads holds that read.
  const reads = page.getByTestId("social-access").getByTestId("usage-chart");
  await expect(reads).toHaveAttribute("data-total", "1");
  await reads.getByText("Show the numbers").click();
  const today = new Date().toISOString().slice(0, 10);
  await expect(reads.getByRole("row", { name: today })).toContainText("1");
  await expect(page.getByTestId("social-pace")).toContainText("within the allowance");
  await screenshot(page, "keys-social");
});
