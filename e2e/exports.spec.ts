import { randomBytes } from "node:crypto";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { db } from "../lib/db/client";
import { buyer, order } from "../tests/helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../tests/helpers/s3";
import { expect, expectNoAxeViolations, screenshot, sha256, signIn, test } from "./helpers";

/**
 * The Exports page as a buyer uses it, at desktop and phone width: add an S3 destination (the tests'
 * s3rver on loopback), test its connection, export an order now and watch the run complete in the
 * server's own worker; the file lands in the store, verified, the secret is never shown again, and
 * axe finds nothing on the page.
 */

const LAKE = "e2e-lake";
let s3: TestS3;

test.beforeAll(async () => {
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE] });
});
test.afterAll(async () => {
  await s3?.stop();
});

for (const [label, viewport] of [
  ["desktop", { width: 1280, height: 900 }],
  ["phone", { width: 390, height: 844 }],
] as const) {
  test(`a destination is added, tested and run from the Exports page (${label})`, async ({ page }) => {
    await page.setViewportSize(viewport);
    const account = await buyer(`e2e-exports-${label}`);
    const content = randomBytes(300_000);
    const delivered = await order(account.id, { name: `${label} catalogue`, files: { "catalogue.bin": content } });
    await signIn(page, account.email);
    await page.goto("/exports");
    await expect(page.getByTestId("no-destinations")).toBeVisible();
    await expectNoAxeViolations(page, "/exports (empty)");

    await page.getByRole("button", { name: "Add destination" }).click();
    const form = page.getByRole("dialog", { name: "Add an export destination" });
    await form.getByLabel("Name").fill("Data lake");
    // Sent from the foot of the tall form with a bad bucket: the refusal is shown by that field, which
    // takes the focus (and so comes into view); nothing waits unseen at the top.
    await form.getByLabel("Bucket").fill("No");
    await form.getByRole("button", { name: "Add destination" }).click();
    const bucket = form.getByLabel("Bucket");
    await expect(bucket).toBeFocused();
    await expect(bucket).toHaveAttribute("aria-invalid", "true");
    await expect(bucket).toHaveAccessibleDescription(/^The bucket name is not valid/);
    await expect(form.getByTestId("field-error")).toHaveText(/^The bucket name is not valid/);
    await expect(form.getByTestId("field-error")).toBeInViewport();
    await expect(form.getByRole("alert")).toHaveCount(0);
    await expectNoAxeViolations(page, "/exports (form, a field refused)");
    await form.getByLabel("Bucket").fill(LAKE);
    await form.getByLabel("Region").fill("us-east-1");
    await form.getByLabel("Endpoint (optional)").fill(s3.endpoint);
    await form.getByLabel(/Path-style addressing/).check();
    await form.getByLabel("Key prefix (optional)").fill(`${label}/`);
    await form.getByLabel("Access key id").fill("S3RVER");
    await form.getByLabel("Secret access key").fill("S3RVER");
    await expectNoAxeViolations(page, "/exports (form)");
    await screenshot(page, `exports-form-${label}`);
    await form.getByRole("button", { name: "Add destination" }).click();
    await expect(form).toBeHidden();

    const card = page.getByTestId("export-destination");
    await expect(card).toContainText("Data lake");
    await expect(card).toContainText(`s3://${LAKE}/${label}/`);
    await card.getByRole("button", { name: /^Test connection/ }).click();
    await expect(page.getByTestId("test-result")).toContainText(
      /^Wrote, read back and deleted _dataset-access-connection-test-/,
    );

    await card.getByLabel("Order to export now").selectOption({ label: `${label} catalogue` });
    await card.getByRole("button", { name: /^Export now/ }).click();
    await expect(page.getByTestId("export-started")).toBeVisible();
    // The server's worker runs it; the page shows the run once reloaded.
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.getByTestId("export-run").first().getAttribute("data-state");
        },
        { timeout: 30_000 },
      )
      .toBe("completed");
    await expect(page.getByTestId("export-run").first()).toContainText("1 file (0 already there)");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, "/exports is wider than the screen").toBeLessThanOrEqual(0);
    await expectNoAxeViolations(page, "/exports (with a run)");
    await screenshot(page, `exports-${label}`);
    expect(await page.content()).not.toContain(">S3RVER<");

    const client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    });
    const object = await client.send(
      new GetObjectCommand({ Bucket: LAKE, Key: `${label}/${delivered.id}/catalogue.bin` }),
    );
    expect(sha256(Buffer.from(await object.Body!.transformToByteArray()))).toBe(sha256(content));
    client.destroy();

    await page.goto("/security");
    await expect(page.getByTestId("security-event").filter({ hasText: "Export destination added" })).toContainText(
      "Data lake",
    );
    await expect(page.getByTestId("security-event").filter({ hasText: "Export destination tested" })).toBeVisible();
    expect(await db().exportRun.count({ where: { buyerId: account.id, state: "completed" } })).toBe(1);
  });
}
