import { db, type Prisma } from "../db/client";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { logger } from "../log";
import { emitEvent } from "../webhooks/emit";
import { RETRY_DELAYS_MS } from "../webhooks/deliver";
import type { RunScope } from "./files";
import { exportRunView, RUN_VIEW_SELECT } from "./views";

/**
 * An attempt's outcome, recorded: the next attempt and its job, or the run's end and its event; a
 * wait for renditions; and the destination paused after 3 days of only failures.
 */

/** Attempts a run gets: the first and one per retry delay (the webhooks' schedule, about 27.6 hours). */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const PAUSE_AFTER_FAILING_MS = 3 * 24 * 60 * 60 * 1000;

export type ExportTriggerName = RunScope["trigger"];

export type RunOutcome =
  | { result: "completed"; files: number; skipped: number; bytes: number; manifestKey: string }
  | { result: "retry"; nextAttemptAt: Date; error: string }
  | { result: "waiting"; nextAttemptAt: Date; reason: string }
  | { result: "failed"; error: string }
  | { result: "skipped"; reason: string };

/** A run whose lease this attempt holds. */
export type Leased = {
  id: string;
  buyerId: string;
  orderId: string;
  trigger: ExportTriggerName;
  tableName: string | null;
  tableVersion: number | null;
  attempts: number;
  createdAt: Date;
  leaseToken: string;
};

/** A run waiting for renditions: pending again soon, its attempt not counted. */
export async function wait(run: Leased, reason: string, nextAttemptAt: Date): Promise<RunOutcome> {
  await jobTransaction(async (tx) => {
    await tx.exportRun.updateMany({
      where: { id: run.id, leaseToken: run.leaseToken },
      data: {
        state: "pending",
        attempts: { decrement: 1 },
        nextAttemptAt,
        leaseUntil: null,
        leaseToken: null,
        error: reason,
      },
    });
    await sendJob(QUEUES.exportRun, { runId: run.id }, { tx, startAfter: nextAttemptAt });
  });
  return { result: "waiting", nextAttemptAt, reason };
}

/** Records an attempt's outcome: the next attempt and its job, or the run's end with its event, in one transaction. */
export async function finish(
  run: Leased,
  outcome: Exclude<RunOutcome, { result: "waiting" | "skipped" }>,
  now: () => Date,
  extra: { manifest?: Prisma.InputJsonValue } = {},
): Promise<RunOutcome> {
  const at = now();
  await jobTransaction(async (tx) => {
    const owned = { id: run.id, leaseToken: run.leaseToken };
    if (outcome.result === "retry") {
      await tx.exportRun.updateMany({
        where: owned,
        data: {
          state: "pending",
          nextAttemptAt: outcome.nextAttemptAt,
          error: outcome.error,
          leaseUntil: null,
          leaseToken: null,
        },
      });
      await sendJob(QUEUES.exportRun, { runId: run.id }, { tx, startAfter: outcome.nextAttemptAt });
      return;
    }
    const { count } = await tx.exportRun.updateMany({
      where: owned,
      data:
        outcome.result === "completed"
          ? {
              state: "completed",
              finishedAt: at,
              files: outcome.files,
              skipped: outcome.skipped,
              bytes: BigInt(outcome.bytes),
              manifestKey: outcome.manifestKey,
              manifest: extra.manifest,
              error: null,
              nextAttemptAt: null,
              leaseUntil: null,
              leaseToken: null,
            }
          : {
              state: "failed",
              finishedAt: at,
              error: outcome.error,
              nextAttemptAt: null,
              leaseUntil: null,
              leaseToken: null,
            },
    });
    if (count === 0) return; // taken over meanwhile: the other attempt records its own end
    const view = await tx.exportRun.findUniqueOrThrow({ where: { id: run.id }, select: RUN_VIEW_SELECT });
    if (outcome.result === "completed") {
      await tx.exportDestination.update({ where: { id: view.destination.id }, data: { failingSince: null } });
    }
    await emitEvent(tx, {
      buyerId: run.buyerId,
      type: outcome.result === "completed" ? "export.completed" : "export.failed",
      data: exportRunView(view),
      at,
    });
  });
  return outcome;
}

/**
 * Why a job found nothing to attempt: the run is over, another worker holds it, or its next
 * attempt is not due (each has its job). A run whose attempts are all spent is failed here.
 */
export async function notAttempted(runId: string, at: Date): Promise<RunOutcome> {
  const run = await db().exportRun.findUnique({
    where: { id: runId },
    select: { state: true, attempts: true, leaseUntil: true, nextAttemptAt: true, error: true },
  });
  if (!run) return { result: "skipped", reason: "no such run" };
  if (run.state === "awaiting_approval") return { result: "skipped", reason: "awaiting the buyer's approval" };
  if (run.state !== "pending" && run.state !== "running") return { result: "skipped", reason: `already ${run.state}` };
  if (run.leaseUntil && run.leaseUntil > at) return { result: "skipped", reason: "another worker holds it" };
  if (run.attempts >= MAX_ATTEMPTS) {
    await db().exportRun.updateMany({
      where: { id: runId, state: { in: ["pending", "running"] } },
      data: { state: "failed", finishedAt: at, nextAttemptAt: null, leaseUntil: null, leaseToken: null },
    });
    return { result: "failed", error: run.error ?? `all ${MAX_ATTEMPTS} attempts were made` };
  }
  return { result: "skipped", reason: `not due until ${run.nextAttemptAt?.toISOString()}` };
}

/** Marks the destination failing; after 3 days of only failures, pauses it and e-mails its owner (once). */
export async function noteDestinationFailure(
  destination: { id: string; name: string; buyerId: string; failingSince: Date | null },
  at: Date,
): Promise<void> {
  const failingSince = destination.failingSince ?? at;
  if (!destination.failingSince) {
    await db().exportDestination.updateMany({
      where: { id: destination.id, failingSince: null },
      data: { failingSince: at },
    });
  }
  if (at.getTime() - failingSince.getTime() < PAUSE_AFTER_FAILING_MS) return;
  const reason = `Paused on ${at.toISOString()}: every run failed for 3 days.`;
  await jobTransaction(async (tx) => {
    const { count } = await tx.exportDestination.updateMany({
      where: { id: destination.id, enabled: true },
      data: { enabled: false, pausedReason: reason },
    });
    if (count === 0) return;
    const buyer = await tx.user.findUniqueOrThrow({ where: { id: destination.buyerId }, select: { email: true } });
    await sendJob(
      QUEUES.mail,
      {
        to: buyer.email,
        subject: "An export destination was paused",
        text: `Every export run to “${destination.name}” has failed for 3 days, so the destination was paused.\n\nSee the runs' errors on the Exports page, fix the store or its settings, test the connection, then resume it.`,
      },
      { tx },
    );
  });
  logger().warn({ destinationId: destination.id }, "export destination paused after 3 days of failures");
}
