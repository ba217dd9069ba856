import { defineConfig } from "vitest/config";
import path from "node:path";

/**
 * The fault-injection suite (`npm run test:faults`): real processes (app instances, the worker,
 * PostgreSQL, Redis, the S3 test store) that the tests kill, pause and restart. Two files at a
 * time: each file's processes, ports and directories are its own (faults hit a process tree, never
 * a process by name), and most of a scenario is waiting out its fault (a 10 s pause, a job's 30 s
 * expiry), so on 2 cores one file at a time left the CPU 62% idle (211 s; two at once about half).
 * The figures a scenario reports (report.jsonl) then include a neighbour's load; the bounds it
 * asserts (answers within 10 s, recovery within minutes) leave room for that.
 */
export default defineConfig({
  resolve: { alias: { "@": path.resolve(".") } },
  test: {
    include: ["tests/faults/**/*.test.ts"],
    globalSetup: ["tests/global-setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
