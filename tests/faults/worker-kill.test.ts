import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue } from "../../lib/queue";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { emitEvent } from "../../lib/webhooks/emit";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { startReceiver } from "../webhooks/receiver";
import { reportFault } from "./helpers/report";

/**
 * The job worker SIGKILLed in the middle of 1,000 webhook deliveries, then started again: every
 * message is delivered at least once (the receiver saw its webhook-id and the database says
 * delivered), none is lost, and the duplicates (a webhook-id received twice: deliveries in flight at
 * the kill are made again once their jobs expire) are counted and reported.
 */

const MESSAGES = 1000;
const KILL_AFTER_RECEIVED = 300;
/** pg-boss expires a dead worker's jobs after 30 s and retries them; far more than that on a loaded machine. */
const RECOVERY_WITHIN_MS = 240_000;

let env: TestEnvironment;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment("fault_worker");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  process.env.WEBHOOK_ALLOW_PRIVATE = "true";
  process.env.WEBHOOK_ALLOW_INSECURE = "true";
});

afterAll(async () => {
  for (const worker of workers) if (worker.exitCode === null && worker.signalCode === null) worker.kill("SIGKILL");
  await closeJobQueue();
  await env?.cleanup();
});

/** `npm run worker` as a process of its own; resolves once it says it has started. */
async function startWorkerProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.resolve("scripts/built.mjs"), "worker"], {
    env: { ...process.env, KEY_LIFECYCLE_CRON: "0 0 1 1 *" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  workers.push(child);
  let output = "";
  child.stdout?.on("data", (chunk) => (output = (output + chunk).slice(-10_000)));
  child.stderr?.on("data", (chunk) => (output = (output + chunk).slice(-10_000)));
  await waitFor(() => /Job worker started/.test(output) || child.exitCode !== null, 60_000, "the worker to start");
  if (child.exitCode !== null) throw new Error(`The worker exited (${child.exitCode}):\n${output}`);
  return child;
}

describe("the worker killed during 1,000 deliveries", () => {
  it("delivers every message at least once after a new worker starts", { timeout: 400_000 }, async () => {
    // Deliveries go out in batches of 25 per loop: at the kill, some are always in flight.
    const receiver = await startReceiver();
    try {
      const account = await buyer("fault-worker");
      const { id: endpointId } = await createEndpoint({
        buyerId: account.id,
        url: receiver.url,
        events: ["order.delivered"],
      });
      const ids: string[] = [];
      for (let batch = 0; batch < MESSAGES / 100; batch++) {
        await db().$transaction(async (tx) => {
          for (let i = 0; i < 100; i++) {
            ids.push(
              ...(await emitEvent(tx, {
                buyerId: account.id,
                type: "webhook.test",
                data: { n: batch * 100 + i },
                at: new Date(),
                endpointId,
              })),
            );
          }
        });
      }
      expect(ids).toHaveLength(MESSAGES);

      const first = await startWorkerProcess();
      await waitFor(
        () => receiver.received.length >= KILL_AFTER_RECEIVED,
        120_000,
        `${KILL_AFTER_RECEIVED} deliveries`,
      );
      first.kill("SIGKILL");
      const killedAt = Date.now();
      const receivedAtKill = receiver.received.length;

      await startWorkerProcess();
      const restartedAt = Date.now();
      const delivered = () => db().webhookMessage.count({ where: { endpointId, status: "delivered" } });
      await waitFor(async () => (await delivered()) === MESSAGES, RECOVERY_WITHIN_MS, "every message delivered");
      const allDeliveredAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 2000)); // a stray duplicate would arrive now

      const received = receiver.received.map(({ headers }) => String(headers["webhook-id"]));
      const unique = new Set(received);
      const lost = ids.filter((id) => !unique.has(id));
      const stillPending = await db().webhookMessage.count({ where: { endpointId, status: { not: "delivered" } } });
      await reportFault("worker-kill-deliveries", {
        messages: MESSAGES,
        received_at_kill: receivedAtKill,
        received: received.length,
        delivered: await delivered(),
        lost: lost.length,
        not_delivered_in_database: stillPending,
        duplicated: received.length - unique.size,
        recovery_ms: allDeliveredAt - restartedAt,
        kill_to_all_delivered_ms: allDeliveredAt - killedAt,
      });
      expect(lost).toEqual([]);
      expect(stillPending).toBe(0);
      expect([...unique].every((id) => ids.includes(id))).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});
