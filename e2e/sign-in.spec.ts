import pg from "pg";
import { buyer } from "../tests/helpers/fixtures";
import {
  expect,
  expectNoAxeViolations,
  mailRecipients,
  requestSignInLink,
  screenshot,
  signIn,
  signInLink,
  submitAndWait,
  test,
  waitForMail,
} from "./helpers";

test("a buyer signs in with the e-mailed link, and the link works only once", async ({ page, browser }) => {
  const { email } = await buyer("e2e-signin");
  await page.goto("/signin");
  await screenshot(page, "sign-in");
  const link = await requestSignInLink(page, email);
  await screenshot(page, "check-email");
  await page.goto(link);
  await expect(page.getByText(`Continue as ${email}`)).toBeVisible();
  // One Sign in on the page, the form's, with the focus (the header's look-alike led back to the form):
  // one key press or click signs in.
  await expect(page.getByRole("link", { name: "Sign in" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Sign in", exact: true })).toBeFocused();
  await expectNoAxeViolations(page, "sign-in confirm page");
  await screenshot(page, "sign-in-confirm");
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/\/orders$/);
  await expect(page.getByTestId("signed-in-as")).toHaveText(email);

  // The same link again, from another browser: the confirm page sees it is used, and offers a new one.
  const other = await browser.newContext({ baseURL: process.env.E2E_BASE_URL });
  const otherPage = await other.newPage();
  await otherPage.goto(link);
  await expect(otherPage.getByRole("heading", { name: "This sign-in link no longer works" })).toBeVisible();
  await expect(otherPage.getByText(/used already \(each link works once\)/)).toBeVisible();
  await screenshot(otherPage, "sign-in-link-used");
  await otherPage.getByRole("link", { name: "Get a new sign-in link" }).click();
  await expect(otherPage.getByLabel("E-mail address")).toHaveValue(email);
  await otherPage.goto("/keys");
  await expect(otherPage).toHaveURL(/\/signin\?callbackUrl=%2Fkeys$/);
  await other.close();

  // Both the sign-in and the refused second use are in the account's security log.
  await page.goto("/security");
  await expect(page.getByTestId("security-event").filter({ hasText: "Signed in" })).toHaveCount(1);
  await expect(page.getByTestId("security-event").filter({ hasText: "Sign-in link refused" })).toContainText(
    "A used or unknown sign-in link was used",
  );
});

test("an expired sign-in link is recognised before it is used, and a new one keeps the way back", async ({ page }) => {
  const { email } = await buyer("e2e-expired");
  // Sent to sign in from the keys page: the link's callback leads back there.
  await page.goto("/keys");
  await expect(page).toHaveURL(/\/signin\?callbackUrl=%2Fkeys$/);
  const link = await requestSignInLink(page, email, { keepPage: true });
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  // The link's 15 minutes have passed.
  const { rowCount } = await client.query(
    `UPDATE auth_verification_tokens SET expires = now() - interval '1 minute' WHERE identifier = $1`,
    [email],
  );
  await client.end();
  expect(rowCount).toBe(1);
  await page.goto(link);
  await expect(page.getByRole("heading", { name: "This sign-in link has expired" })).toBeVisible();
  await expect(page.getByTestId("signed-in-as")).toHaveCount(0);
  // The new link's form has the address filled in and still leads to the keys page.
  await page.getByRole("link", { name: "Get a new sign-in link" }).click();
  await expect(page.getByLabel("E-mail address")).toHaveValue(email);
  await expect(page.getByTestId("sign-in-to-continue")).toHaveText("Sign in to continue to /keys.");
  const fresh = signInLink(await submitAndWait(page, email));
  // On a phone too, the confirm page's first click signs in.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(fresh);
  await expect(page.getByRole("link", { name: "Sign in" })).toHaveCount(0);
  await expectNoAxeViolations(page, "sign-in confirm page at phone width");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page).toHaveURL(/\/keys$/);
  await page.setViewportSize({ width: 1280, height: 720 });

  // A tampered link is refused the same way, without a button that would spend anything.
  const tampered = new URL(fresh);
  tampered.searchParams.set(
    "token",
    tampered.searchParams.get("token")!.replace(/.$/, (c) => (c === "a" ? "b" : "a")),
  );
  await page.goto(tampered.toString());
  await expect(page.getByRole("heading", { name: "This sign-in link no longer works" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Sign in", exact: true })).toHaveCount(0);
});

test("an address without a buyer account gets the same answer and no e-mail", async ({ page }) => {
  const stranger = `stranger-${Date.now()}@example.com`;
  await page.goto("/signin");
  await page.getByLabel("E-mail address").fill(stranger);
  await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
  await expect(page.getByRole("heading", { name: "Check your e-mail" })).toBeVisible();
  // A buyer's request after it: once that e-mail has arrived, the stranger's would have too.
  const { email } = await buyer("e2e-after-stranger");
  const since = Date.now();
  await requestSignInLink(page, email);
  await waitForMail(email, since);
  expect(await mailRecipients()).not.toContain(stranger);
});

test("signing out ends the session", async ({ page }) => {
  const { email } = await buyer("e2e-signout");
  await signIn(page, email);
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByTestId("signed-out")).toHaveText("You are signed out.");
  await expect(page.getByRole("link", { name: "Sign in" }).first()).toBeVisible();
  await page.goto("/keys");
  await expect(page).toHaveURL(/\/signin\?callbackUrl=%2Fkeys$/);
  // Sent from a protected page: told why, the return path kept, the e-mail field ready to type in.
  await expect(page.getByTestId("sign-in-to-continue")).toHaveText("Sign in to continue to /keys.");
  await expect(page.getByLabel("E-mail address")).toBeFocused();
});
