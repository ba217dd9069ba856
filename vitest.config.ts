import { defineConfig } from "vitest/config";
import path from "node:path";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(".") } },
  test: {
    include: ["tests/**/*.test.ts", "lib/**/*.test.ts"],
    // The fault-injection suite runs on its own: npm run test:faults (vitest.faults.config.ts).
    exclude: ["tests/faults/**", "**/node_modules/**"],
    globalSetup: ["tests/global-setup.ts"],
    // Logs go to a file per test file, printed when a test fails (tests/helpers/test-log.ts).
    setupFiles: ["tests/helpers/test-log.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
