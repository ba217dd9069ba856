import { Webhook } from "standardwebhooks";
import { db } from "../lib/db/client";
import { closeJobQueue, QUEUES, sendJob } from "../lib/queue";
import { startReceiver } from "../tests/webhooks/receiver";
import { apiKey, buyer } from "../tests/helpers/fixtures";
import { expect, mailRecipients, screenshot, signIn, test, waitForMail } from "./helpers";

test("an endpoint is added with its secret shown once, and a test event shows up in its log", async ({ page }) => {
  const receiver = await startReceiver();
  try {
    const account = await buyer("e2e-webhooks");
    await signIn(page, account.email);
    await page.goto("/webhooks");
    await expect(page.getByTestId("no-endpoints")).toBeVisible();
    // The e2e server allows receivers on this machine (WEBHOOK_ALLOW_*, as development does), and says so.
    await expect(page.getByTestId("local-receivers")).toContainText("http://127.0.0.1:4000/hooks");
    await screenshot(page, "webhooks-empty");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const form = page.getByRole("dialog", { name: "Add a webhook endpoint" });
    await form.getByLabel("URL").fill(receiver.url);
    await form.getByRole("button", { name: "Add endpoint" }).click();
    const shown = page.getByRole("dialog", { name: "Copy the signing secret" });
    const secret = (await shown.getByTestId("new-webhook-secret").textContent())!.trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    await screenshot(page, "webhook-secret");
    await shown.getByRole("button", { name: "I have stored it" }).click();
    // Shown once: the page keeps only its last characters.
    const endpoint = page.getByTestId("webhook-endpoint");
    await expect(endpoint).toContainText(`whsec_…${secret.slice(-4)}`);
    expect(await page.content()).not.toContain(secret);

    await endpoint.getByRole("button", { name: /^Send test event/ }).click();
    await expect(page.getByTestId("test-event-sent")).toBeVisible();
    // The in-process worker delivers it; the log shows the attempt once the page is reloaded.
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.getByTestId("webhook-message").first().getAttribute("data-status");
        },
        { timeout: 20_000 },
      )
      .toBe("delivered");
    await expect(page.getByTestId("webhook-attempt").first()).toContainText("200");
    await screenshot(page, "webhooks");
    const [request] = receiver.received;
    const verified = new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>) as {
      type: string;
    };
    expect(verified.type).toBe("webhook.test");

    // Resend: the same message (same webhook-id) once more.
    await page
      .getByRole("button", { name: /^Resend/ })
      .first()
      .click();
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(2);
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(request!.headers["webhook-id"]);

    await page.goto("/security");
    await expect(page.getByTestId("security-event").filter({ hasText: "Webhook endpoint added" })).toContainText(
      receiver.url,
    );
    // One grouped select filters the log (it was 17 chips, 11 rows on a phone).
    await page.getByLabel("Show").selectOption("webhook_created");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect(page).toHaveURL(/\/security\?kind=webhook_created$/);
    await expect(page.getByTestId("security-event")).toHaveCount(1);
  } finally {
    await receiver.close();
  }
});

test("a key replaced with a 1-hour overlap: both keys work, and the old one shows when it retires", async ({
  page,
  request,
}) => {
  const account = await buyer("e2e-overlap");
  const old = await apiKey(account.id);
  await signIn(page, account.email);
  await page.goto("/keys");
  await page.getByRole("button", { name: "Replace test key" }).first().click();
  const dialog = page.getByRole("dialog", { name: "Replace “test key”" });
  await dialog.getByLabel("in 1 hour").check();
  const before = Date.now();
  await dialog.getByRole("button", { name: "Create replacement" }).click();
  const shown = page.getByRole("dialog", { name: "Copy your new API key" });
  const secret = (await shown.getByTestId("new-key-secret").textContent())!.trim();
  await shown.getByRole("button", { name: "I have stored it" }).click();

  for (const key of [old.secret, secret]) {
    const answer = await request.get("/api/v1/orders", { headers: { Authorization: `Bearer ${key}` } });
    expect(answer.status()).toBe(200);
  }
  const retires = page.getByTestId("key-retires-at").filter({ visible: true });
  await expect(retires).toHaveCount(1);
  const at = Date.parse((await retires.locator("time").getAttribute("datetime"))!);
  expect(at - before).toBeGreaterThan(3_590_000);
  expect(at - before).toBeLessThan(3_700_000);
  await screenshot(page, "key-overlap");

  // When the overlap has ended, the old key is refused on its next request.
  await db().apiKey.update({ where: { id: old.id }, data: { retiresAt: new Date(Date.now() - 1000) } });
  const refused = await request.get("/api/v1/orders", { headers: { Authorization: `Bearer ${old.secret}` } });
  expect(refused.status()).toBe(401);
  expect((await refused.json()).code).toBe("revoked_api_key");
});

test("a key expiring within 7 days gets one reminder e-mail", async () => {
  test.setTimeout(120_000);
  const account = await buyer("e2e-reminder");
  const key = await apiKey(account.id);
  const since = Date.now();
  await db().apiKey.update({ where: { id: key.id }, data: { expiresAt: new Date(Date.now() + 5 * 86_400_000) } });
  // The server's worker runs the key lifecycle on its cron; this queues a run now, as the cron does,
  // rather than waiting for the next minute.
  await sendJob(QUEUES.keyLifecycle, {});
  const mail = await waitForMail(account.email, since, 60_000);
  expect(mail.subject).toBe("Your API key “test key” expires in 7 days");
  expect(mail.text).toContain(`“test key” expires on`);
  expect(mail.text).toContain("/keys");
  // Once: later runs find its reminder already sent.
  await sendJob(QUEUES.keyLifecycle, {});
  await sendJob(QUEUES.keyLifecycle, {});
  // Both runs done, and any e-mail they queued sent: nothing of either queue waits or runs any more.
  const unfinished = async () =>
    (
      await db().$queryRaw<{ count: number }[]>`
        SELECT count(*)::int AS count FROM pgboss.job
        WHERE name IN (${QUEUES.keyLifecycle}, ${QUEUES.mail}) AND state IN ('created', 'retry', 'active')`
    )[0]!.count;
  await expect.poll(unfinished, { timeout: 60_000 }).toBe(0);
  expect((await mailRecipients()).filter((to) => to === account.email.toLowerCase())).toHaveLength(1);
  await closeJobQueue();
});
