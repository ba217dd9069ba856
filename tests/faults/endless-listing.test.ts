import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createDestination } from "../../lib/exports/destinations";
import { exportNow } from "../../lib/exports/run-now";
import { closeJobQueue } from "../../lib/queue";
import { OPERATOR } from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { startEndlessListingStore, type EndlessListingStore } from "../exports/endless-listing-store";
import { reportFault } from "./helpers/report";

/**
 * A buyer's S3 store that lists forever (IsTruncated, a new token, no keys: the review's 412,000
 * listing requests in 5 minutes) with three runs queued to it, more than the worker's two export
 * loops, met by `npm run worker` as its own process. Another buyer's run to a good store must
 * complete within a minute while the hostile store goes on answering; the hostile runs' listings
 * are given up at their bounds and they complete file by file.
 */

const LAKE = "fault-lake";
const OTHER_RUN_WITHIN_MS = 60_000;

let env: TestEnvironment;
let s3: TestS3;
let store: EndlessListingStore;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  env = await createTestEnvironment("fault_endless_listing");
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE] });
  store = await startEndlessListingStore("s3", s3.endpoint);
  Object.assign(process.env, {
    STORAGE_DRIVER: "local",
    AUTH_SECRET: TEST_AUTH_SECRET,
    EXPORT_ALLOW_PRIVATE: "true",
    EXPORT_SECRETS_KEY: randomBytes(32).toString("base64"),
  });
});

afterAll(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill("SIGKILL");
  await store?.close();
  await closeJobQueue();
  await s3?.stop();
  await env?.cleanup();
});

/** `npm run worker` as a process of its own, with two export loops; resolves once it says it has started. */
async function startWorkerProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.resolve("scripts/built.mjs"), "worker"], {
    env: { ...process.env, EXPORT_CONCURRENCY: "2", KEY_LIFECYCLE_CRON: "0 0 1 1 *" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => (output = (output + chunk).slice(-10_000)));
  child.stderr?.on("data", (chunk) => (output = (output + chunk).slice(-10_000)));
  await waitFor(() => /Job worker started/.test(output) || child.exitCode !== null, 60_000, "the worker to start");
  if (child.exitCode !== null) throw new Error(`The worker exited (${child.exitCode}):\n${output}`);
  return child;
}

const fields = (endpoint: string, prefix: string) => ({
  bucket: LAKE,
  endpoint,
  force_path_style: true,
  prefix: `${prefix}/`,
  access_key_id: "S3RVER",
  secret_access_key: "S3RVER",
});

const stateOf = async (runId: string) =>
  (await db().exportRun.findUniqueOrThrow({ where: { id: runId }, select: { state: true } })).state;

describe("a store that lists forever", () => {
  it("another buyer's run completes within a minute, and the hostile runs end", { timeout: 400_000 }, async () => {
    const attacker = await buyer("fault-endless");
    const hostile = await createDestination(
      attacker.id,
      { name: "endless", type: "s3", fields: fields(store.origin, "endless") },
      OPERATOR,
    );
    const hostileRuns: string[] = [];
    for (let i = 0; i < 3; i++) {
      const files = Object.fromEntries(Array.from({ length: 10 }, (_, n) => [`f${n}.bin`, randomBytes(500 + n)]));
      const { id } = await order(attacker.id, { name: `endless ${i}`, files });
      hostileRuns.push(...(await exportNow({ orderId: id, destinationId: hostile.id })).map((run) => run.id));
    }
    const startedAt = Date.now();
    worker = await startWorkerProcess();
    await waitFor(() => store.listings() > 0, 60_000, "the hostile store to be listed");

    const other = await buyer("fault-endless-other");
    const good = await createDestination(
      other.id,
      { name: "good", type: "s3", fields: fields(s3.endpoint, "good") },
      OPERATOR,
    );
    const { id: otherOrder } = await order(other.id, { files: { "a.bin": randomBytes(100) } });
    const [otherRun] = await exportNow({ orderId: otherOrder, destinationId: good.id });
    const queuedAt = Date.now();
    let otherState = "pending";
    await waitFor(
      async () => (otherState = await stateOf(otherRun!.id)) === "completed",
      OTHER_RUN_WITHIN_MS,
      "the other buyer's run to complete",
    ).catch(() => {});
    const otherCompletedMs = Date.now() - queuedAt;
    const listingsWhenOtherDone = store.listings();
    await waitFor(
      async () =>
        (await Promise.all(hostileRuns.map(stateOf))).every((state) => state !== "pending" && state !== "running"),
      240_000,
      "the hostile runs to end",
    ).catch(() => {});
    const hostileStates = await Promise.all(hostileRuns.map(stateOf));
    await reportFault("export-endless-listing", {
      hostile_runs: hostileRuns.length,
      export_loops: 2,
      other_run_state: otherState,
      other_run_completed_ms: otherCompletedMs,
      listing_requests_when_other_done: listingsWhenOtherDone,
      listing_requests: store.listings(),
      hostile_run_states: hostileStates,
      all_ended_ms: Date.now() - startedAt,
    });
    expect(otherState).toBe("completed");
    expect(hostileStates).toEqual(["completed", "completed", "completed"]);
  });
});
