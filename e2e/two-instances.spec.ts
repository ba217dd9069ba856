import type { Page } from "@playwright/test";
import { randomBytes } from "node:crypto";
import { registerStoredObject } from "../lib/operator/orders";
import { buyer, order } from "../tests/helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../tests/helpers/s3";
import { startServer, type TestServer } from "../tests/helpers/server";
import { expect, sha256, signInLink, test, waitForMail } from "./helpers";

/**
 * Several instances behind one address: two production servers on different ports with one
 * PostgreSQL database, the real Redis (REDIS_URL) and one S3 bucket, as README "Running several
 * instances" describes. A buyer signs in on one and goes on on the other: sessions, keys,
 * revocations, downloads and the rate limit are shared, nothing is kept per instance.
 */
const redisUrl = process.env.REDIS_URL;
test.skip(!redisUrl, "needs REDIS_URL: the shared rate limit of several instances lives in Redis");

let s3: TestS3;
let one: TestServer;
let two: TestServer;

test.beforeAll(async () => {
  s3 = await startTestS3();
  const shared = {
    ...s3.env,
    REDIS_URL: redisUrl!,
    EMAIL_SERVER: process.env.E2E_SMTP_URL!,
    EMAIL_FROM: "Dataset Access <sign-in@dataset-access.test>",
  };
  // The same database as the other end-to-end tests (DATABASE_URL from global-setup); files in S3.
  const start = () =>
    startServer({ databaseUrl: process.env.DATABASE_URL!, storageDir: "/nonexistent", withAppUrl: true, env: shared });
  [one, two] = await Promise.all([start(), start()]);
});

test.afterAll(async () => {
  await Promise.all([one?.stop(), two?.stop()]);
  await s3?.stop();
});

async function createKey(page: Page, server: TestServer, name: string): Promise<string> {
  await page.goto(`${server.url}/keys`);
  await page.getByRole("button", { name: "Create key" }).click();
  const form = page.getByRole("dialog", { name: "Create an API key" });
  await form.getByLabel("Name").fill(name);
  await form.getByRole("button", { name: "Create key" }).click();
  const shown = page.getByRole("dialog", { name: "Copy your new API key" });
  const secret = (await shown.getByTestId("new-key-secret").textContent())!.trim();
  await shown.getByRole("button", { name: "I have stored it" }).click();
  return secret;
}

test("a session, keys, revocations, downloads and the rate limit span both instances", async ({ page }) => {
  const account = await buyer("e2e-two-instances");
  // A delivered file in the shared bucket, registered as an operator does (order:add-file --from).
  const bytes = randomBytes(100_000);
  const delivered = await order(account.id, { files: {} });
  await s3.putObject(`exports/${delivered.id}.bin`, bytes);
  Object.assign(process.env, { ...s3.env, STORAGE_DRIVER: process.env.STORAGE_DRIVER ?? "local" });
  const file = await registerStoredObject({
    orderId: delivered.id,
    location: `s3://${TEST_BUCKET}/exports/${delivered.id}.bin`,
  });

  // Signed in on instance 1; the same session cookie works on instance 2 (host-only cookies ignore the port).
  const since = Date.now();
  await page.goto(`${one.url}/signin`);
  await page.getByLabel("E-mail address").fill(account.email);
  await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
  await page.goto(signInLink(await waitForMail(account.email, since)));
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page).toHaveURL(`${one.url}/orders`);

  // A key made through instance 1 works on instance 2...
  const key = await createKey(page, one, "made on one");
  const api = (server: TestServer, path: string, secret = key) =>
    fetch(`${server.url}/api/v1${path}`, { headers: { Authorization: `Bearer ${secret}` }, redirect: "manual" });
  expect((await api(two, "/orders")).status).toBe(200);

  // ...and its revocation on instance 2 applies on instance 1 at the next request.
  await page.goto(`${two.url}/keys`);
  const row = page.getByTestId("key-row").filter({ hasText: "made on one" });
  await row.getByRole("button", { name: "Revoke made on one" }).click();
  await page.getByRole("dialog", { name: "Revoke “made on one”?" }).getByRole("button", { name: "Revoke key" }).click();
  await expect(row.getByTestId("key-status")).toHaveText("Revoked");
  const refused = await api(one, "/orders");
  expect(refused.status).toBe(401);
  expect((await refused.json()).code).toBe("revoked_api_key");

  // A download redirect from instance 1 fetches the bytes (straight from the store).
  const second = await createKey(page, two, "made on two");
  const redirect = await api(one, `/orders/${delivered.id}/files/${file.id}`, second);
  expect(redirect.status).toBe(302);
  const location = redirect.headers.get("location")!;
  expect(new URL(location).origin).toBe(s3.endpoint);
  expect(sha256(Buffer.from(await (await fetch(location)).arrayBuffer()))).toBe(sha256(bytes));

  // The account's 60 a minute, counted over both instances: 66 requests alternating between them
  // (33 each, within each instance's own 60) meet 429s. Not an exact count: the sliding window
  // weighs the previous fixed window's count by how much of it is still inside the minute, so the
  // two counted requests above weigh 0 to 2 here (CI once saw 59 answers of 200 where 58 were
  // asserted), and the few seconds of this loop free up to 3 more.
  const statuses: number[] = [];
  for (let i = 0; i < 66; i++) statuses.push((await api(i % 2 ? one : two, "/orders?limit=1", second)).status);
  const firstLimited = statuses.indexOf(429);
  expect(firstLimited).toBeGreaterThanOrEqual(58);
  expect(firstLimited).toBeLessThanOrEqual(63);
  expect(statuses.slice(0, firstLimited).every((status) => status === 200)).toBe(true);
  expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(63);
});
