import { createHash, randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { test as base, expect, type Page } from "@playwright/test";
import PostalMime from "postal-mime";
import { db } from "../lib/db/client";
import { buyer, order } from "../tests/helpers/fixtures";
import { E2E_SERVER_LOG, serverLogSince, serverLogSize } from "./server-log";
import { workerStateOf } from "./worker-state";

/**
 * Fixtures of the end-to-end tests. Data is loaded through the domain modules (as the operator
 * CLI does) into the database the server under test uses (DATABASE_URL, set by global-setup).
 */

export const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/**
 * A buyer with a delivered order (two files), a refunded order (one file) and an unfinished one. The
 * files are binary, listed at once: a data file is a table's part, seen only once its version is made.
 */
export async function buyerWithOrders(label: string) {
  const account = await buyer(label);
  const deliveredFiles = { "products.zip": randomBytes(48_213), "reviews.zip": randomBytes(1024) };
  const refundedFiles = { "old-prices.zip": randomBytes(2048) };
  const unfinished = await order(account.id, { name: `${label}: crawl in progress`, status: "unfinished" });
  const refunded = await order(account.id, {
    name: `${label}: refunded prices`,
    status: "refunded",
    files: refundedFiles,
  });
  const delivered = await order(account.id, {
    name: `${label}: product catalogue`,
    status: "delivered",
    files: deliveredFiles,
  });
  return { ...account, delivered, deliveredFiles, refunded, refundedFiles, unfinished };
}

/** Products with more columns than a phone shows side by side: the preview's table must scroll in its own box. */
export const PRODUCTS = Array.from({ length: 120 }, (_, i) => ({
  id: i + 1,
  name: `Product ${i + 1}`,
  category: ["kitchen", "garden", "office"][i % 3]!,
  price: (i + 1) * 1.25,
  in_stock: i % 4 !== 0,
  listed_at: `2026-10-${String((i % 28) + 1).padStart(2, "0")} 08:00:00`,
  description: `A well-made product number ${i + 1}, sold by the piece and shipped within two days`,
  note: i % 10 === 0 ? null : `note ${i + 1}`,
}));

const csvField = (value: unknown) =>
  value === null ? "" : /[",\n]/.test(String(value)) ? `"${String(value).replaceAll('"', '""')}"` : String(value);

const productsCsv = () =>
  [Object.keys(PRODUCTS[0]!), ...PRODUCTS.map((product) => Object.values(product))]
    .map((fields) => fields.map(csvField).join(","))
    .join("\n") + "\n";

/**
 * A buyer with a delivered order of data files, profiled by the server's job worker: a CSV of
 * PRODUCTS (with its Parquet rendition), a CSV that cannot be read (its publication fails: no buyer
 * sees it), and a binary file.
 */
export async function buyerWithDataOrder(label: string) {
  const account = await buyer(label);
  const delivered = await order(account.id, {
    name: `${label}: product data`,
    files: {
      "products.csv": Buffer.from(productsCsv()),
      "ragged.csv": Buffer.from("a,b\n1,2\n3,4,5\n6\n"),
      "photos.bin": randomBytes(2048),
    },
  });
  await whenProfiled(delivered.id);
  return { ...account, delivered };
}

/**
 * Waits until the job worker has profiled an order's data files, made every rendition asked for and
 * judged each publication (a part is seen once its version is made; a failed one never).
 */
export async function whenProfiled(orderId: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = async () =>
    (await db().orderFile.count({ where: { orderId, profileStatus: "pending" } })) +
    (await db().fileRendition.count({ where: { file: { orderId }, status: "pending" } })) +
    (await db().tablePublication.count({ where: { table: { orderId }, status: { in: ["uploading", "processing"] } } }));
  while ((await pending()) > 0) {
    if (Date.now() > deadline) {
      throw new Error(`Order ${orderId} was not profiled within ${timeoutMs} ms: ${await workerStateOf(orderId)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type Mail = { to: string[]; subject: string; text: string };

/** The next sign-in e-mail the SMTP server received for `email` after `since` (ms since the epoch). */
export async function waitForMail(email: string, since: number, timeoutMs = 15_000): Promise<Mail> {
  const mailDir = process.env.E2E_MAIL_DIR!;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const name of (await fs.readdir(mailDir)).sort()) {
      if (name.endsWith(".partial") || Number(name.split("-")[0]) < since) continue;
      const stored = JSON.parse(await fs.readFile(path.join(mailDir, name), "utf8")) as { to: string[]; raw: string };
      if (!stored.to.includes(email.toLowerCase())) continue;
      const parsed = await PostalMime.parse(stored.raw);
      return { to: stored.to, subject: parsed.subject ?? "", text: parsed.text ?? "" };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`No e-mail for ${email} within ${timeoutMs} ms`);
}

/** Every address the SMTP server has received mail for so far. */
export async function mailRecipients(): Promise<string[]> {
  const mailDir = process.env.E2E_MAIL_DIR!;
  // A `.partial` file is a mail still being written (renamed when whole), as waitForMail skips it.
  const names = (await fs.readdir(mailDir)).filter((name) => !name.endsWith(".partial"));
  const stored = await Promise.all(
    names.map(async (name) => JSON.parse(await fs.readFile(path.join(mailDir, name), "utf8"))),
  );
  return stored.flatMap((mail: { to: string[] }) => mail.to);
}

export function signInLink(mail: Mail): string {
  const link = /https?:\/\/\S+\/signin\/confirm\?\S+/.exec(mail.text)?.[0];
  if (!link) throw new Error(`No sign-in link in the e-mail:\n${mail.text}`);
  return link;
}

/**
 * Asks for a sign-in link on the sign-in page (the one open if `keepPage`, to keep its return
 * path) and returns the link from the e-mail.
 */
export async function requestSignInLink(page: Page, email: string, { keepPage = false } = {}): Promise<string> {
  if (!keepPage) await page.goto("/signin");
  return signInLink(await submitAndWait(page, email));
}

/** Sends the open sign-in form for `email` and waits for the e-mail it causes. */
export async function submitAndWait(page: Page, email: string): Promise<Mail> {
  const since = Date.now();
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
  await expect(page.getByRole("heading", { name: "Check your e-mail" })).toBeVisible();
  return waitForMail(email, since);
}

/** The whole sign-in: request the link, open it from the e-mail, confirm. Ends on the orders page. */
export async function signIn(page: Page, email: string): Promise<void> {
  const link = await requestSignInLink(page, email);
  await page.goto(link);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page).toHaveURL(/\/orders$/);
  await expect(page.getByTestId("signed-in-as")).toHaveText(email);
}

/** The page has no WCAG 2.1 A/AA violation axe can find; `where` names the page in the failure. */
export async function expectNoAxeViolations(page: Page, where: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    .analyze();
  const found = violations.map((v) => `${where}: ${v.id} (${v.nodes.length}): ${v.nodes[0]?.target.join(" ")}`);
  expect(found, found.join("\n")).toEqual([]);
}

/** A full-page screenshot kept with the test's artifacts and in test-results/e2e/screenshots/. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const file = path.resolve("test-results/e2e/screenshots", `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  await test.info().attach(name, { path: file, contentType: "image/png" });
}

/**
 * Every test runs against the server started by global-setup, and fails if the page broke its
 * Content-Security-Policy (a blocked script or style would leave the page half-working).
 */
export const test = base.extend<{ cspViolations: string[]; serverLogOnFailure: void }>({
  baseURL: async ({}, use) => use(process.env.E2E_BASE_URL),
  serverLogOnFailure: [
    async ({}, use, testInfo) => {
      const from = serverLogSize();
      await use();
      if (testInfo.status !== testInfo.expectedStatus) {
        console.error(
          `The server's log while this test ran (all of it: ${E2E_SERVER_LOG}):\n${serverLogSince(from) || "(empty)"}`,
        );
      }
    },
    { auto: true },
  ],
  cspViolations: [
    async ({ page }, use) => {
      const violations: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error" && /Content Security Policy/i.test(message.text()))
          violations.push(message.text());
      });
      await use(violations);
      expect(violations, "Content-Security-Policy violations").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
