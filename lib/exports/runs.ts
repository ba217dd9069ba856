import { createHash, randomUUID } from "node:crypto";
import { Readable, Transform } from "node:stream";
import { db, Prisma, sqlQuery } from "../db/client";
import { AppError } from "../errors";
import { describeId, isTypedId } from "../ids";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { errorFields, logger } from "../log";
import { countExportRun } from "../metrics";
import { emitEvent } from "../webhooks/emit";
import { RETRY_DELAYS_MS } from "../webhooks/deliver";
import type { ExportFormat } from "./config";
import { describePlace, openDestination, secretValues } from "./destinations";
import { describeFailure } from "./failures";
import { exportFilesOf, openSource, RenditionPendingError, type ExportFile, type RunScope } from "./files";
import { exportRunView, RUN_VIEW_SELECT, type ExportRunView } from "./views";
import { commonFolder, renderKey, runFolder, type KeyValues } from "./template";
import { openTarget, type ExportTarget, type Present } from "./targets";
import { stallTimeoutMs } from "./targets/target";
import { listOrGiveUp } from "./targets/bounded-listing";
import { LISTING_WITHIN_MS } from "./targets/listing";
import { holdLease, LEASE_MS, renewRunLease, type HeldLease } from "./lease";
import { destinationShare, SHARE_RETRY_MS, takeRun } from "./fairness";

/**
 * Export runs: one per destination and trigger (a delivered order, a new table version, "Export
 * now"), recorded with its job in the transaction of the change that causes it, and run by the job
 * worker on the export queue (its own concurrency, EXPORT_CONCURRENCY). An attempt copies every
 * file of the run that is not already in the store with the same sha256, streaming from either
 * storage driver, then writes `_manifest.json` last. A failed attempt is retried on the webhooks'
 * schedule (over 24 hours), then the run fails; `export.completed` and `export.failed` are sent as
 * webhook events. A destination whose every run failed for 3 days is paused and its owner e-mailed.
 */

/** Attempts a run gets: the first and one per retry delay (the webhooks' schedule, about 27.6 hours). */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const PAUSE_AFTER_FAILING_MS = 3 * 24 * 60 * 60 * 1000;
/** A run waiting for renditions looks again this often, for at most RENDITION_WAIT_MS after it was made. */
const RENDITION_POLL_MS = 15_000;
const RENDITION_WAIT_MS = 6 * 3600_000;
/**
 * How many files are copied at once, by size: tiny ones 16 at a time, ones of up to a part (read whole
 * into memory) 8, larger ones alone (each has its own parts or blocks in flight). At most about 64 MB
 * of file bytes are held at once.
 */
const LANES = [
  { upTo: 1024 * 1024, lanes: 16 },
  { upTo: 8 * 1024 * 1024, lanes: 8 },
  { upTo: Number.MAX_SAFE_INTEGER, lanes: 1 },
];
export const MANIFEST_NAME = "_manifest.json";

export type ExportTriggerName = RunScope["trigger"];

/**
 * Records the runs a change causes, with their jobs, inside `tx`: one for each enabled destination
 * of the buyer that takes this order (or only `destinationId`). Called in the transaction of the
 * change itself, as emitEvent is for webhooks: `order.delivered` from setOrderStatus, `manual` from
 * "Export now", and `table.updated` (with `table` and `version`) once a version is made. The same
 * trigger twice makes no second run; "Export now" while a run of that order is pending or running
 * returns that run. Returns the runs' ids.
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
    select: { id: true },
  });
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
    const [created] = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO export_runs (buyer_id, destination_id, order_id, trigger, trigger_key, table_name, table_version,
                               created_at, next_attempt_at)
      VALUES (${input.buyerId}, ${destination.id}, ${input.orderId}, ${input.trigger}::export_trigger, ${triggerKey},
              ${input.table ?? null}, ${input.version ?? null}, ${at}, ${at})
      ON CONFLICT (destination_id, trigger_key) DO NOTHING
      RETURNING id`;
    if (!created) continue;
    await sendJob(QUEUES.exportRun, { runId: created.id }, { tx });
    ids.push(created.id);
  }
  return ids;
}

export type RunOutcome =
  | { result: "completed"; files: number; skipped: number; bytes: number; manifestKey: string }
  | { result: "retry"; nextAttemptAt: Date; error: string }
  | { result: "waiting"; nextAttemptAt: Date; reason: string }
  | { result: "failed"; error: string }
  | { result: "skipped"; reason: string };

type Leased = {
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
    target = openTarget(destination);
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

type PlannedFile = ExportFile & { key: string };

/** Each file's key under the template; a rendition whose name meets another file's gets its original name before its format. */
function planKeys(files: ExportFile[], template: string, run: Omit<KeyValues, "file_name" | "file_id">): PlannedFile[] {
  const values = (file: ExportFile, name: string): KeyValues => ({
    order_id: run.order_id,
    order_name: run.order_name,
    file_name: name,
    file_id: file.fileId,
    date: run.date,
    ...(file.table ? { table: file.table.name, version: file.table.version } : {}),
  });
  const taken = new Set<string>();
  return files.map((file) => {
    let key = renderKey(template, values(file, file.name));
    // The manifest takes that name in the run's folder: a delivered file of that name goes beside it, under its id.
    if (key.split("/").pop() === MANIFEST_NAME)
      key = renderKey(template, values(file, `_manifest.${file.fileId}.json`));
    if (taken.has(key) && file.format !== "original") {
      key = renderKey(template, values(file, `${file.name.replace(/\.[^.]+$/, "")}.${file.fileId}.${file.format}`));
    }
    if (taken.has(key))
      throw new Error(`two files of the order would be written to ${key}: use {file_id} in the key template`);
    taken.add(key);
    return { ...file, key };
  });
}

type Copied = { key: string; skipped: boolean; verifiedBy: string };

/**
 * A folder holding at least this many of a run's files is listed (a page per 1,000 objects) instead
 * of asked about key by key; a listing past its bounds (./targets/listing.ts: a folder shared with
 * much else, or a store that lists forever) is given up for the per-key checks.
 */
const LIST_FROM_FILES = 8;

/** Copies the planned files (small ones several at once), skipping any already there with the same sha256. */
async function copyAll(
  run: Leased,
  target: ExportTarget,
  planned: PlannedFile[],
  destinationId: string,
  lease: HeldLease,
): Promise<Copied[]> {
  const leaseLost = lease.signal;
  const results = new Map<string, Copied>();
  let done = 0;
  let bytes = 0;
  let lastReport = Date.now();
  const report = async (force = false) => {
    if (!force && Date.now() - lastReport < 2000) return;
    lastReport = Date.now();
    await db()
      .exportRun.updateMany({
        where: { id: run.id, leaseToken: run.leaseToken },
        data: { files: done, bytes: BigInt(bytes) },
      })
      .catch(() => {});
  };
  const there = await whatIsThere(target, planned, destinationId, lease);
  const copyOne = async (file: PlannedFile) => {
    if (leaseLost.aborted) throw leaseLost.reason;
    const result = (await alreadyThere(target, file, there, destinationId, leaseLost))
      ? { key: file.key, skipped: true, verifiedBy: "already there" }
      : { key: file.key, skipped: false, verifiedBy: (await copyFile(target, file, lease)).verifiedBy };
    results.set(file.key, result);
    lease.moved();
    done++;
    bytes += file.size;
    await report();
  };
  // Small files are latency-bound (a write each, and a check where no listing answered): many at once; larger ones hold a part or block each.
  for (const { upTo, lanes } of LANES) {
    const tier = planned.filter(
      (file) => file.size <= upTo && !LANES.some((lane) => lane.upTo < upTo && file.size <= lane.upTo),
    );
    await pool(tier, lanes, copyOne);
  }
  await report(true);
  return planned.map((file) => results.get(file.key)!);
}

type Found = { listed: Map<string, Present | null>; exportedBefore: Set<string> };

/**
 * What the store holds at the run's keys, from one listing per folder that holds at least
 * LIST_FROM_FILES of them: a key listed is there (with what the listing says), a key of a listed
 * folder not listed is not. For a store that keeps no sha256 (SFTP), the earlier completed runs that
 * wrote a listed key with this file's sha256 are looked up in one query. Keys of folders not listed
 * (few files, a listing refused or too long) are not in the answer: each is asked on its own.
 */
async function whatIsThere(
  target: ExportTarget,
  planned: PlannedFile[],
  destinationId: string,
  lease: HeldLease,
): Promise<Found> {
  const listed = new Map<string, Present | null>();
  const byFolder = new Map<string, PlannedFile[]>();
  for (const file of planned) {
    const folder = file.key.split("/").slice(0, -1).join("/");
    const files = byFolder.get(folder);
    if (files) files.push(file);
    else byFolder.set(folder, [file]);
  }
  // One deadline for all of the attempt's listings: past it, every folder left is checked file by file.
  const deadline = AbortSignal.any([AbortSignal.timeout(LISTING_WITHIN_MS), lease.signal]);
  for (const [folder, files] of byFolder) {
    if (files.length < LIST_FROM_FILES || deadline.aborted) continue;
    const objects = await listOrGiveUp(target, folder, deadline, lease.moved);
    if (!objects) continue;
    for (const file of files) listed.set(file.key, objects.get(file.key) ?? null);
  }
  const unknown = planned.filter((file) => {
    const found = listed.get(file.key);
    return found && found.size === file.size && found.sha256 === null;
  });
  return { listed, exportedBefore: await exportedKeys(target, destinationId, unknown) };
}

/** Whether `file` is in the store already with its sha256: from the listing where there was one, else asked. */
async function alreadyThere(
  target: ExportTarget,
  file: PlannedFile,
  { listed, exportedBefore: exported }: Found,
  destinationId: string,
  leaseLost: AbortSignal,
): Promise<boolean> {
  let found = listed.get(file.key);
  const fromListing = found !== undefined;
  // Not listed, or listed without its metadata (S3's listings carry none) and the same size: ask.
  if (found === undefined || (found && found.size === file.size && found.sha256 === undefined)) {
    found = await target.head(file.key, leaseLost);
  }
  if (!found || found.size !== file.size) return false;
  if (found.sha256 === file.sha256) return true;
  if (found.sha256 !== null) return false;
  return fromListing
    ? exported.has(`${target.fullKey(file.key)} ${file.sha256}`)
    : exportedBefore(destinationId, target.fullKey(file.key), file.sha256);
}

/** Of `files`, those an earlier completed run of this destination wrote to their key with their sha256, as `fullKey sha256`. */
async function exportedKeys(target: ExportTarget, destinationId: string, files: PlannedFile[]): Promise<Set<string>> {
  if (files.length === 0) return new Set();
  const rows = await sqlQuery<{ key: string; sha256: string }>(
    `SELECT DISTINCT f->>'key' AS key, f->>'sha256' AS sha256
     FROM export_runs r CROSS JOIN LATERAL jsonb_array_elements(r.manifest->'files') f
     WHERE r.destination_id = $1 AND r.state = 'completed' AND f->>'key' = ANY($2::text[])`,
    [destinationId, files.map((file) => target.fullKey(file.key))],
  );
  return new Set(rows.map((row) => `${row.key} ${row.sha256}`));
}

/** Whether an earlier completed run of this destination wrote this file's bytes to this key (for stores without metadata: SFTP). */
async function exportedBefore(destinationId: string, key: string, sha256: string): Promise<boolean> {
  const [found] = await sqlQuery<{ id: string }>(
    `SELECT id FROM export_runs WHERE destination_id = $1 AND state = 'completed'
       AND manifest->'files' @> $2::jsonb LIMIT 1`,
    [destinationId, JSON.stringify([{ key, sha256 }])],
  );
  return Boolean(found);
}

/** One file, streamed from its storage into the store; given up when no byte moved for the stall timeout. */
async function copyFile(target: ExportTarget, file: PlannedFile, lease: HeldLease): Promise<{ verifiedBy: string }> {
  const leaseLost = lease.signal;
  const controller = new AbortController();
  const stopOnLease = () => controller.abort(leaseLost.reason);
  leaseLost.addEventListener("abort", stopOnLease, { once: true });
  const stall = stallTimeoutMs();
  const timer = setTimeout(() => controller.abort(new Error(`no byte moved for ${Math.round(stall / 1000)} s`)), stall);
  let source: Readable | undefined;
  try {
    // Every read puts the stall timer back: a local file's by the target, a stream's chunk by chunk below.
    const opened = await openSource(file.location, file.size, {
      signal: controller.signal,
      onRead: () => {
        timer.refresh();
        lease.moved();
      },
    });
    if (!(opened instanceof Readable)) return await target.put(file.key, opened, file, controller.signal);
    source = opened;
    // A pass-through, since a listener on the source itself would start it flowing early.
    const watched = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        timer.refresh();
        lease.moved();
        done(null, chunk);
      },
    });
    source.on("error", (error) => watched.destroy(error));
    source.pipe(watched);
    return await target.put(file.key, watched, file, controller.signal);
  } catch (error) {
    // An abort's reason says more than the stream's "The operation was aborted".
    source?.destroy();
    throw controller.signal.aborted ? (controller.signal.reason as Error) : error;
  } finally {
    clearTimeout(timer);
    leaseLost.removeEventListener("abort", stopOnLease);
  }
}

/** Runs `work` over `items`, at most `size` at once; the first failure stops new work and is thrown once the rest settle. */
async function pool<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const lanes = Array.from({ length: Math.min(size, items.length) }, async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      await work(item).catch((error: unknown) => {
        failure ??= error;
      });
    }
  });
  await Promise.all(lanes);
  if (failure !== undefined) throw failure;
}

/** What the run exported: every file's key in the store, size, sha256 and table version. */
function manifestOf(
  run: Leased,
  order: { id: string; name: string },
  planned: PlannedFile[],
  copied: Copied[],
  target: ExportTarget,
): Prisma.InputJsonObject {
  const tables = new Map<string, number>();
  for (const file of planned) if (file.table) tables.set(file.table.name, file.table.version);
  return {
    run_id: run.id,
    trigger: run.trigger,
    order_id: order.id,
    order_name: order.name,
    created_at: run.createdAt.toISOString(),
    tables: [...tables].map(([name, version]) => ({ name, version })),
    files: planned.map((file, index) => ({
      key: target.fullKey(file.key),
      file_id: file.fileId,
      name: file.name,
      size: file.size,
      sha256: file.sha256,
      content_type: file.contentType,
      format: file.format,
      table: file.table ?? null,
      already_there: copied[index]!.skipped,
    })),
  };
}

/** `_manifest.json` in `folder` (the one the run's files share), written after every file is in place. Returns its key in the store. */
async function writeManifest(
  target: ExportTarget,
  destinationId: string,
  folder: string,
  manifest: Prisma.InputJsonObject,
): Promise<string> {
  const key = folder ? `${folder}/${MANIFEST_NAME}` : MANIFEST_NAME;
  const bytes = Buffer.from(`${JSON.stringify({ destination_id: destinationId, ...manifest }, null, 2)}\n`);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const expected = { size: bytes.length, sha256, contentType: "application/json" };
  await target.put(key, bytes, expected, AbortSignal.timeout(stallTimeoutMs()));
  return target.fullKey(key);
}

/** A run waiting for renditions: pending again soon, its attempt not counted. */
async function wait(run: Leased, reason: string, nextAttemptAt: Date): Promise<RunOutcome> {
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
async function finish(
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
async function notAttempted(runId: string, at: Date): Promise<RunOutcome> {
  const run = await db().exportRun.findUnique({
    where: { id: runId },
    select: { state: true, attempts: true, leaseUntil: true, nextAttemptAt: true, error: true },
  });
  if (!run) return { result: "skipped", reason: "no such run" };
  if (run.state === "completed" || run.state === "failed") return { result: "skipped", reason: `already ${run.state}` };
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
async function noteDestinationFailure(
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

/**
 * "Export now" (the dashboard, `export:run`): a manual run of a delivered order to one destination
 * (or every enabled destination that takes the order), returned as the API shows runs. `buyerId`
 * scopes it to a buyer (the dashboard); the operator passes none.
 */
export async function exportNow(input: {
  orderId: string;
  destinationId?: string;
  buyerId?: string;
}): Promise<ExportRunView[]> {
  const order = isTypedId("ord", input.orderId)
    ? await db().order.findFirst({
        where: { id: input.orderId, ...(input.buyerId ? { buyerId: input.buyerId } : {}) },
        select: { id: true, buyerId: true, status: true },
      })
    : null;
  if (!order) throw new AppError("order_not_found", `No order ${describeId("ord", input.orderId)}.`);
  if (order.status !== "delivered") {
    throw new AppError("invalid_argument", `Order ${order.id} is ${order.status}: only delivered orders are exported.`);
  }
  if (input.destinationId !== undefined) {
    const destination = isTypedId("exd", input.destinationId)
      ? await db().exportDestination.findFirst({
          where: { id: input.destinationId, buyerId: order.buyerId },
          select: { enabled: true, name: true },
        })
      : null;
    if (!destination)
      throw new AppError("not_found", `No export destination ${input.destinationId} for this order's buyer.`);
    if (!destination.enabled) {
      throw new AppError("invalid_argument", `The destination “${destination.name}” is paused: resume it first.`);
    }
  }
  const ids = await jobTransaction((tx) =>
    queueExportRuns(tx, {
      buyerId: order.buyerId,
      orderId: order.id,
      trigger: "manual",
      destinationId: input.destinationId,
    }),
  );
  if (ids.length === 0) {
    throw new AppError(
      "invalid_argument",
      `No enabled export destination takes order ${order.id}: add one, or name one.`,
    );
  }
  return runViews(ids);
}

/**
 * `export:run --wait`: attempts each run here and now (a run another worker holds is watched until
 * it lets go), waiting out renditions being made, until each has completed, failed or been given a
 * retry for later (its error says why). Returns the runs as they stand.
 */
export async function waitForRuns(
  ids: string[],
  { pollMs = 1000 }: { pollMs?: number } = {},
): Promise<ExportRunView[]> {
  for (const id of ids) {
    for (;;) {
      const outcome = await runExport(id, { shared: false });
      if (outcome.result === "waiting") {
        await sleep(Math.max(0, outcome.nextAttemptAt.getTime() - Date.now()));
        continue;
      }
      if (outcome.result !== "skipped") break;
      const run = await db().exportRun.findUnique({ where: { id }, select: { state: true, leaseUntil: true } });
      if (!run || run.state === "completed" || run.state === "failed") break;
      if (run.state === "pending" && !run.leaseUntil) break; // a retry is scheduled for later
      await sleep(pollMs);
    }
  }
  return runViews(ids);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs as the API shows them, in the order of `ids`. */
export async function runViews(ids: string[]): Promise<ExportRunView[]> {
  const rows = await db().exportRun.findMany({ where: { id: { in: ids } }, select: RUN_VIEW_SELECT });
  const byId = new Map(rows.map((row) => [row.id, exportRunView(row)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** The worker's handler of the export queue. */
export async function handleExportJob(data: Record<string, unknown>): Promise<void> {
  if (typeof data.runId !== "string") return;
  await runExport(data.runId).catch((error: unknown) => {
    logger().error({ runId: data.runId, ...errorFields(error) }, "export run failed to run");
    throw error; // pg-boss retries the job
  });
}

export type { ExportRunView };
