import { defineConfig } from "vitest/config";
import path from "node:path";

/**
 * The fault-injection suite (`npm run test:faults`): real processes (app instances, the worker,
 * PostgreSQL, Redis, the S3 test store) that the tests kill, pause and restart. One file at a
 * time: each scenario measures what a fault costs, and two at once would blur the figures.
 */
export default defineConfig({
  resolve: { alias: { "@": path.resolve(".") } },
  test: {
    include: ["tests/faults/**/*.test.ts"],
    globalSetup: ["tests/global-setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    pool: "forks",
    fileParallelism: false,
  },
});
