import { randomUUID } from "node:crypto";
import { db, Prisma, sqlQuery } from "../db/client";
import { QUEUES, sendJob } from "../queue";
import { errorFields, logger } from "../log";
import { countExportRun } from "../metrics";
import { RETRY_DELAYS_MS } from "../webhooks/deliver";
import type { ExportFormat } from "./config";
import { describePlace, openDestination, secretValues } from "./destinations";
import { describeFailure } from "./failures";
import { exportFilesOf, RenditionPendingError, type RunScope } from "./files";
import { commonFolder, runFolder, type KeyValues } from "./template";
import { openTarget, type ExportTarget } from "./targets";
import { holdLease, LEASE_MS, renewRunLease, type HeldLease } from "./lease";
import { destinationShare, SHARE_RETRY_MS, takeRun } from "./fairness";
import { copyAll, planKeys } from "./copy";
import { manifestOf, writeManifest } from "./manifest";
import {
  finish,
  MAX_ATTEMPTS,
  notAttempted,
  noteDestinationFailure,
  wait,
  type ExportTriggerName,
  type Leased,
  type RunOutcome,
} from "./outcomes";

/**
 * Export runs: one per destination and trigger (a delivered order, a new table version, "Export
 * now"), recorded with its job in the transaction of the change that causes it, and run by the job
 * worker on the export queue (its own concurrency, EXPORT_CONCURRENCY). An attempt copies every
 * file of the run that is not already in the store with the same sha256, streaming from either
 * storage driver, then writes `_manifest.json` last. A failed attempt is retried on the webhooks'
 * schedule (over 24 hours), then the run fails; `export.completed` and `export.failed` are sent as
 * webhook events. A destination whose every run failed for 3 days is paused and its owner e-mailed.
 * Here: queueing and the attempt; copying is in ./copy.ts, the manifest in ./manifest.ts, outcomes
 * and retries in ./outcomes.ts, "Export now" and `--wait` in ./run-now.ts.
 */

/** A run waiting for renditions looks again this often, for at most RENDITION_WAIT_MS after it was made. */
const RENDITION_POLL_MS = 15_000;
const RENDITION_WAIT_MS = 6 * 3600_000;

/**
 * Records the runs a change causes, with their jobs, inside `tx`: one for each enabled destination
 * of the buyer that takes this order (or only `destinationId`). Called in the transaction of the
 * change itself, as emitEvent is for webhooks: `order.delivered` from setOrderStatus, `manual` from
 * "Export now", and `table.updated` (with `table` and `version`) once a version is made. The same
 * trigger twice makes no second run; "Export now" while a run of that order is pending or running
 * returns that run. A table.updated run of a version whose quality is not passed, to a destination
 * with approval on_warning, is made awaiting_approval with no job: it runs once the buyer approves
 * it (./approval.ts). Returns the runs' ids.
 */
export async function queueExportRuns(
  tx: Prisma.TransactionClient,
  input: {
    buyerId: string;
    orderId: string;
    trigger: ExportTriggerName;
    table?: string;
    version?: number;
    destinationId?: string;
    at?: Date;
  },
): Promise<string[]> {
  const at = input.at ?? new Date();
  const destinations = await tx.exportDestination.findMany({
    where: {
      buyerId: input.buyerId,
      enabled: true,
      // A destination named (Export now) takes the order asked for; otherwise its orders setting decides.
      ...(input.destinationId
        ? { id: input.destinationId }
        : { OR: [{ allOrders: true }, { orderIds: { has: input.orderId } }] }),
    },
    select: { id: true, approval: true },
  });
  const warned = input.trigger === "table.updated" && (await versionNotPassed(tx, input));
  const triggerKey =
    input.trigger === "table.updated"
      ? `table.updated:${input.orderId}:${input.table}:${input.version}`
      : input.trigger === "order.delivered"
        ? `order.delivered:${input.orderId}:${at.toISOString()}`
        : `manual:${randomUUID()}`;
  const ids: string[] = [];
  for (const destination of destinations) {
    if (input.trigger === "manual") {
      const under = await tx.exportRun.findFirst({
        where: { destinationId: destination.id, orderId: input.orderId, state: { in: ["pending", "running"] } },
        select: { id: true },
      });
      if (under) {
        ids.push(under.id);
        continue;
      }
    }
    const awaiting = warned && destination.approval === "on_warning";
    const [created] = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO export_runs (buyer_id, destination_id, order_id, trigger, trigger_key, table_name, table_version,
                               state, created_at, next_attempt_at)
      VALUES (${input.buyerId}, ${destination.id}, ${input.orderId}, ${input.trigger}::export_trigger, ${triggerKey},
              ${input.table ?? null}, ${input.version ?? null},
              ${awaiting ? "awaiting_approval" : "pending"}::export_run_state, ${at}, ${at})
      ON CONFLICT (destination_id, trigger_key) DO NOTHING
      RETURNING id`;
    if (!created) continue;
    if (!awaiting) await sendJob(QUEUES.exportRun, { runId: created.id }, { tx });
    ids.push(created.id);
  }
  return ids;
}

/** Whether the table version's quality is other than passed (a version made before the checks counts as passed). */
async function versionNotPassed(
  tx: Prisma.TransactionClient,
  input: { orderId: string; table?: string; version?: number },
): Promise<boolean> {
  const [row] = await tx.$queryRaw<{ status: string | null }[]>`
    SELECT v.quality->>'status' AS status FROM table_versions v JOIN order_tables t ON t.id = v.table_id
    WHERE t.order_id = ${input.orderId} AND t.name = ${input.table ?? null} AND v.version = ${input.version ?? null}`;
  return (row?.status ?? "passed") !== "passed";
}

/**
 * One attempt of a run, by whichever worker takes its lease: copies what is missing, writes the
 * manifest, and records the outcome (a next attempt, or the run's end and its event). `now` is
 * injectable so the schedule is tested without waiting.
 */
export async function runExport(
  runId: string,
  { now = () => new Date(), shared = true }: { now?: () => Date; shared?: boolean } = {},
): Promise<RunOutcome> {
  const startedAt = now();
  const taken = await takeRun({
    runId,
    token: randomUUID(),
    at: startedAt,
    leaseUntil: new Date(Date.now() + LEASE_MS),
    maxAttempts: MAX_ATTEMPTS,
    // A worker's loop takes no more than the destination's share; `export:run --wait` is no worker's loop.
    share: shared ? destinationShare() : null,
  });
  if (taken === "over share") {
    const at = new Date(Date.now() + SHARE_RETRY_MS);
    await sendJob(QUEUES.exportRun, { runId }, { startAfter: at });
    return { result: "skipped", reason: "its destination has its share of the export workers: looked at again soon" };
  }
  if (taken === "unavailable") return notAttempted(runId, startedAt);
  const run = taken as Leased;
  const lease = holdLease(() => renewRunLease(run.id, run.leaseToken), {
    onRenewError: (error) => logger().warn({ runId, ...errorFields(error) }, "export run: lease not renewed"),
  });
  let outcome: RunOutcome;
  try {
    outcome = await attempt(run, lease, startedAt, now);
  } finally {
    lease.stop();
  }
  countExportRun(outcome.result);
  logger().info({ runId, ...outcome }, "export run attempt");
  return outcome;
}

async function attempt(run: Leased, lease: HeldLease, startedAt: Date, now: () => Date): Promise<RunOutcome> {
  const row = await db().exportRun.findUniqueOrThrow({
    where: { id: run.id },
    select: {
      destination: true,
      order: { select: { id: true, name: true, status: true } },
    },
  });
  const { destination: destinationRow, order } = row;
  if (!destinationRow.enabled) {
    return finish(
      run,
      {
        result: "failed",
        error: `The destination is paused: ${destinationRow.pausedReason ?? "resume it to export again."}`,
      },
      now,
    );
  }
  if (order.status !== "delivered") {
    return finish(
      run,
      { result: "failed", error: `Order ${order.id} is ${order.status}: only delivered orders are exported.` },
      now,
    );
  }
  let secrets: string[] = [];
  let target: ExportTarget | undefined;
  const place = describePlace({ type: destinationRow.type, config: destinationRow.config, secrets: {} } as never);
  try {
    const destination = await openDestination(destinationRow);
    secrets = secretValues(destination);
    const scope: RunScope = {
      orderId: order.id,
      trigger: run.trigger,
      ...(run.tableName && run.tableVersion !== null
        ? { table: { name: run.tableName, version: run.tableVersion } }
        : {}),
    };
    const files = await exportFilesOf(run.buyerId, scope, (destinationRow.format ?? "original") as ExportFormat);
    const { keyTemplate: template } = destinationRow;
    const values: Omit<KeyValues, "file_name" | "file_id"> = {
      order_id: order.id,
      order_name: order.name,
      date: run.createdAt.toISOString().slice(0, 10),
      ...(scope.table ? { table: scope.table.name, version: scope.table.version } : {}),
    };
    const planned = planKeys(files, template, values);
    target = await openTarget(destination);
    const copied = await copyAll(run, target, planned, destinationRow.id, lease);
    const manifest = manifestOf(run, order, planned, copied, target);
    const folder = planned.length > 0 ? commonFolder(planned.map((file) => file.key)) : runFolder(template, values);
    const manifestKey = await writeManifest(target, destinationRow.id, folder, manifest);
    return finish(
      run,
      {
        result: "completed",
        files: planned.length,
        skipped: copied.filter((file) => file.skipped).length,
        bytes: planned.reduce((sum, file) => sum + file.size, 0),
        manifestKey,
      },
      now,
      { manifest },
    );
  } catch (error) {
    if (error instanceof RenditionPendingError && startedAt.getTime() - run.createdAt.getTime() < RENDITION_WAIT_MS) {
      return wait(run, error.message, new Date(startedAt.getTime() + RENDITION_POLL_MS));
    }
    // A request aborted by the lease says only "aborted": the lease's reason says why.
    const message = describeFailure(
      lease.signal.aborted ? lease.signal.reason : error,
      `The store (${place})`,
      secrets,
    );
    logger().warn({ runId: run.id, error: message }, "export run attempt failed");
    const delay = RETRY_DELAYS_MS[run.attempts - 1];
    const outcome: RunOutcome =
      delay === undefined
        ? { result: "failed", error: message }
        : { result: "retry", nextAttemptAt: new Date(startedAt.getTime() + delay), error: message };
    const recorded = await finish(run, outcome, now);
    await noteDestinationFailure(destinationRow, startedAt);
    return recorded;
  } finally {
    await target?.close().catch(() => {});
  }
}

/** A run pending this far past its due time, with no job waiting for it and no live lease, is queued again. */
const STRANDED_AFTER_MS = 60_000;

/**
 * Queues a job for every unfinished run that has none waiting and no worker holding it: its job
 * ran out of pg-boss's retries, or its worker died mid-copy (its lease ran out). Run every minute;
 * a run queued twice is harmless (an attempt first takes its lease).
 */
export async function requeueStrandedRuns(now = new Date(), batch = 1000): Promise<number> {
  const stranded = await sqlQuery<{ id: string }>(
    `SELECT r.id FROM export_runs r
     WHERE r.state IN ('pending', 'running')
       AND coalesce(r.next_attempt_at, r.created_at) <= $1
       AND (r.lease_until IS NULL OR r.lease_until <= $2)
       AND NOT EXISTS (
         SELECT 1 FROM pgboss.job j
         WHERE j.name = $3 AND j.state IN ('created', 'retry') AND j.data->>'runId' = r.id
       )
     ORDER BY r.next_attempt_at
     LIMIT $4`,
    [new Date(now.getTime() - STRANDED_AFTER_MS), now, QUEUES.exportRun, batch],
  );
  for (const { id } of stranded) await sendJob(QUEUES.exportRun, { runId: id });
  if (stranded.length > 0) logger().warn({ count: stranded.length }, "export runs with no job queued again");
  return stranded.length;
}

/** The worker's handler of the export queue. */
export async function handleExportJob(data: Record<string, unknown>): Promise<void> {
  if (typeof data.runId !== "string") return;
  await runExport(data.runId).catch((error: unknown) => {
    logger().error({ runId: data.runId, ...errorFields(error) }, "export run failed to run");
    throw error; // pg-boss retries the job
  });
}
