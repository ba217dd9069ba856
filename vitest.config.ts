import { defineConfig } from "vitest/config";
import os from "node:os";
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
    // A file per core, not vitest's default of one fewer: most files spend their time waiting on
    // the servers, workers and engines they start, which run in processes of their own. On the
    // 2-core CI machine one worker left npm test at about 1,350 s, two took it to 1,016 s.
    maxWorkers: os.availableParallelism(),
  },
});
