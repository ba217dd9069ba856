import { defineConfig } from "@playwright/test";

/**
 * End-to-end tests of the buyer's journeys in Chromium (Debian's package: Playwright's own
 * browser download does not work here; CHROMIUM_PATH overrides the path) against the production
 * build, with sign-in e-mails received by a real SMTP server (e2e/global-setup.ts).
 */
export default defineConfig({
  testDir: "e2e",
  globalSetup: "./e2e/global-setup.ts",
  outputDir: "test-results/e2e",
  // Two cores: the server, PostgreSQL and the browser share them.
  workers: 1,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  forbidOnly: !!process.env.CI,
  reporter: [["list"], ["html", { open: "never", outputFolder: "test-results/e2e-report" }]],
  use: {
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
    acceptDownloads: true,
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
  },
});
