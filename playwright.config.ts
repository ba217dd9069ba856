import { existsSync } from "node:fs";
import { defineConfig } from "@playwright/test";

/**
 * End-to-end tests of the buyer's journeys in Chromium (Debian's package: Playwright's own
 * browser download does not work here; CHROMIUM_PATH overrides the path) against the production
 * build, with sign-in e-mails received by a real SMTP server (e2e/global-setup.ts).
 */

/**
 * Debian's chromium-headless-shell where installed: the same Blink as `chromium` without the full
 * browser around it, which is also what Playwright runs headless by default. The suite took 159 s
 * with it against 199 s with `chromium`, the browser's CPU 99 s against 177 s (2 cores, one worker).
 */
const HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell";
const chromiumPath = process.env.CHROMIUM_PATH ?? (existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : "/usr/bin/chromium");

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
      executablePath: chromiumPath,
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
