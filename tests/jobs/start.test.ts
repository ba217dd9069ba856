import { afterAll, beforeAll, expect, it } from "vitest";
import { sqlQuery } from "../../lib/db/client";
import { startWorker } from "../../lib/jobs";
import { createTestEnvironment } from "../helpers/database";
import type { TestEnvironment } from "../helpers/fixtures";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("jobs_start");
});
afterAll(async () => {
  await env?.cleanup();
});

it("starts several workers at once on a new database (one installs the queue's schema, all run)", async () => {
  const stops = await Promise.all(Array.from({ length: 4 }, () => startWorker({ handlers: {} })));
  try {
    const [version] = await sqlQuery<{ version: number }>("SELECT version FROM pgboss.version", []);
    expect(version?.version).toBeGreaterThan(0);
    // The app's own queries still work on the shared pool afterwards.
    expect(await sqlQuery<{ one: number }>("SELECT 1 AS one", [])).toEqual([{ one: 1 }]);
  } finally {
    await Promise.all(stops.map((stop) => stop()));
  }
});
