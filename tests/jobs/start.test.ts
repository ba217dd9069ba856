import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { sqlQuery } from "../../lib/db/client";
import { startWorker } from "../../lib/queue";
import { logger } from "../../lib/log";
import { createTestEnvironment } from "../helpers/database";
import type { TestEnvironment } from "../helpers/fixtures";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("jobs_start");
});
afterAll(async () => {
  await env?.cleanup();
});

// Issue #39: they deadlocked installing it ("deadlock detected ... trying again" in every test run's output).
it("starts several workers at once on a new database (one installs the queue's schema, all run)", async () => {
  const warn = vi.spyOn(logger(), "warn");
  const stops = await Promise.all(Array.from({ length: 4 }, () => startWorker({ handlers: {} })));
  try {
    const [version] = await sqlQuery<{ version: number }>("SELECT version FROM pgboss.version", []);
    expect(version?.version).toBeGreaterThan(0);
    // The app's own queries still work on the shared pool afterwards.
    expect(await sqlQuery<{ one: number }>("SELECT 1 AS one", [])).toEqual([{ one: 1 }]);
    expect(warn.mock.calls.map(([, message]) => message)).not.toContain("job queue: start failed, trying again");
  } finally {
    await Promise.all(stops.map((stop) => stop()));
  }
});
