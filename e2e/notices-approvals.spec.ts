import { db } from "../lib/db/client";
import { queueExportRuns } from "../lib/exports/runs";
import { jobTransaction } from "../lib/queue";
import { postNotice } from "../lib/tables/notices";
import { buyer, order } from "../tests/helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../tests/helpers/s3";
import { expect, expectNoAxeViolations, screenshot, signIn, test } from "./helpers";

/**
 * What a buyer sees of contract Part 6 beyond the version's report, at desktop and phone width
 * with axe: the banner of a table's notices on the order page, and a run of a version with quality
 * warnings waiting on the Exports page of a destination set (in its form) to wait for approval,
 * approved there and run to completed by the server's worker into an S3 store on loopback.
 */

const LAKE = "e2e-approvals";
let s3: TestS3;

test.beforeAll(async () => {
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE] });
});
test.afterAll(async () => {
  await s3?.stop();
});

/** A delivered order whose prices.csv the server's worker made version 1 of the table "prices". */
async function orderWithTable(buyerId: string, label: string) {
  const made = await order(buyerId, {
    name: `${label} prices`,
    files: { "prices.csv": Buffer.from("id,price\n1,3\n2,4\n") },
  });
  await expect
    .poll(() => db().tableVersion.count({ where: { table: { orderId: made.id, name: "prices" } } }), {
      timeout: 90_000,
    })
    .toBe(1);
  return made;
}

const overflow = (page: import("@playwright/test").Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

for (const [label, viewport] of [
  ["desktop", { width: 1280, height: 900 }],
  ["phone", { width: 390, height: 844 }],
] as const) {
  test(`a table's notices show as a banner on the order page (${label})`, async ({ page }) => {
    await page.setViewportSize(viewport);
    const account = await buyer(`e2e-notices-${label}`);
    const made = await orderWithTable(account.id, label);
    await postNotice({
      orderId: made.id,
      table: "prices",
      type: "schema_change",
      message: "A column currency is added on December 5.\nPrices stay in euros until then.",
      effectiveAt: "2026-12-05T00:00:00Z",
    });
    await postNotice({ orderId: made.id, table: "prices", type: "delay", message: "This week's refresh is late." });
    await signIn(page, account.email);
    await page.goto(`/orders/${made.id}`);
    const banner = page.getByRole("status").filter({ has: page.getByTestId("table-notices") });
    await expect(banner).toBeVisible();
    await expect(banner.getByRole("heading", { name: "Notices about its tables" })).toBeVisible();
    const notices = banner.getByTestId("table-notice");
    await expect(notices).toHaveCount(2);
    await expect(notices.nth(0)).toContainText("Delay · table prices");
    await expect(notices.nth(1)).toContainText("Schema change · table prices · from 2026-12-05 00:00 UTC");
    await expect(notices.nth(1)).toContainText("Prices stay in euros until then.");
    expect(await overflow(page), "the order page is wider than the screen").toBeLessThanOrEqual(0);
    await expectNoAxeViolations(page, "/orders/[id] (notices)");
    await screenshot(page, `order-notices-${label}`);
  });

  test(`a run of a version with quality warnings is approved on the Exports page (${label})`, async ({ page }) => {
    await page.setViewportSize(viewport);
    const account = await buyer(`e2e-approvals-${label}`);
    const made = await orderWithTable(account.id, label);
    await signIn(page, account.email);
    await page.goto("/exports");
    await page.getByRole("button", { name: "Add destination" }).click();
    const form = page.getByRole("dialog", { name: "Add an export destination" });
    await form.getByLabel("Name").fill("Checked lake");
    await form.getByLabel("Bucket").fill(LAKE);
    await form.getByLabel("Region").fill("us-east-1");
    await form.getByLabel("Endpoint (optional)").fill(s3.endpoint);
    await form.getByLabel(/Path-style addressing/).check();
    await form.getByLabel("Key prefix (optional)").fill(`${label}/`);
    await form.getByLabel("Access key id").fill("S3RVER");
    await form.getByLabel("Secret access key").fill("S3RVER");
    await form.getByLabel("Wait for my approval on this page").check();
    await expectNoAxeViolations(page, "/exports (form with approval)");
    await form.getByRole("button", { name: "Add destination" }).click();
    await expect(form).toBeHidden();
    const card = page.getByTestId("export-destination");
    await expect(card).toContainText("versions with quality warnings wait for your approval");

    // Version 1 as the gate marks a warned version, announced as the pipeline does it.
    await db().tableVersion.updateMany({
      where: { version: 1, table: { orderId: made.id, name: "prices" } },
      data: {
        quality: {
          status: "warned",
          reason: null,
          checks: [
            { name: "distinct_drop", column: "price", value: 0.6, threshold: 0.5, level: "warn", outcome: "warned" },
          ],
        },
      },
    });
    await jobTransaction((tx) =>
      queueExportRuns(tx, {
        buyerId: account.id,
        orderId: made.id,
        trigger: "table.updated",
        table: "prices",
        version: 1,
      }),
    );
    await page.reload();
    const run = card.getByTestId("export-run").first();
    await expect(run).toHaveAttribute("data-state", "awaiting_approval");
    await expect(run.getByTestId("awaiting-approval")).toContainText("Version 1 of table prices");
    expect(await overflow(page), "/exports is wider than the screen").toBeLessThanOrEqual(0);
    await expectNoAxeViolations(page, "/exports (awaiting approval)");
    await screenshot(page, `exports-awaiting-approval-${label}`);

    await run.getByRole("button", { name: "Approve the export of prices version 1" }).click();
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.getByTestId("export-run").first().getAttribute("data-state");
        },
        { timeout: 60_000 },
      )
      .toBe("completed");
    await expect(page.getByRole("button", { name: /^Approve/ })).toHaveCount(0);
    expect(await s3.objectKeys(LAKE)).toContainEqual(
      expect.stringMatching(new RegExp(`^${label}/.*/v1/prices\\.csv$`)),
    );
  });
}
