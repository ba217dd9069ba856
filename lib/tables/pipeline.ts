import { db, type Prisma } from "../db/client";
import { profileStoredFile } from "../datasets/profile";
import { makeRendition } from "../datasets/renditions";
import type { Column } from "../engine/engine-tasks";
import { logger } from "../log";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { queueExportRuns } from "../exports/runs";
import { emitEvent } from "../webhooks/emit";
import { countTablePublication } from "../metrics";
import { keyProblem, requestParquet } from "./key-check";
import {
  holdPublication,
  measurePublication,
  qualityChecksOn,
  qualityReport,
  releasedQuality,
  releasedReport,
  verdictOf,
} from "./quality";
import { discardChangeFile, makeChangeFile, recordChangeFile, versionParts } from "./changes";
import { columnDifference, columnEvolutionProblem, reservedColumnProblem } from "./columns";
import { tableFreshnessText, versionJson } from "./queries";

/**
 * A publication's way to a version (contract Part 4), one job per step reached
 * (`table-publication`, queued when its last part is stored and whenever one of its parts is
 * profiled or gets its Parquet rendition, and by a sweep). It becomes the table's next version when
 * every part is profiled with the same columns, none named as the change feed's own (./columns.ts),
 * the columns equal the previous version's or only add columns after them, every part's Parquet rendition is ready, and the key holds (every key
 * column present, no null key, no key twice in a snapshot). Otherwise it fails with a sentence
 * naming the part, the column or the first duplicate key, and the table keeps its current version.
 * Its change file (./changes.ts) is made last, and its quality report (./quality.ts) judged: a
 * hold-level check that fails makes it `held`; else the version, its change file's row, its counts,
 * its quality and the `table.updated` event commit together.
 *
 * Publications of one table become versions in their publishing order (`seq`): one waits while an
 * earlier one is still processing or held, and each finished one queues the next. The version is made in
 * one transaction that holds the table's row, so versions have no gaps and appear whole, also when
 * several workers run.
 */

export type Advance = "waiting" | "ready" | "held" | "failed" | "skipped";

/** One more step for a publication; idempotent (a publication no longer processing is left alone). */
export async function advancePublication(publicationId: string): Promise<Advance> {
  const publication = await db().tablePublication.findUnique({
    where: { id: publicationId },
    select: {
      id: true,
      status: true,
      seq: true,
      report: true,
      figures: true,
      reason: true,
      table: {
        select: { id: true, orderId: true, name: true, mode: true, key: true, currentVersion: true, checks: true },
      },
      parts: {
        orderBy: { name: "asc" },
        select: {
          id: true,
          name: true,
          profileStatus: true,
          profileError: true,
          columns: true,
          rows: true,
          renditions: { where: { format: "parquet" }, select: { status: true, storageKey: true, error: true } },
        },
      },
    },
  });
  if (!publication || publication.status !== "processing" || publication.seq === null) return "skipped";
  const { table, parts } = publication;
  // A held publication holds back the ones after it until it is released or rejected.
  const earlier = await db().tablePublication.count({
    where: { tableId: table.id, status: { in: ["processing", "held"] }, seq: { lt: publication.seq } },
  });
  if (earlier > 0) return "waiting";
  if (parts.length === 0) return fail(publicationId, table.id, "The publication has no parts left.");
  if (parts.some((part) => part.profileStatus === "pending")) return "waiting";

  const unreadable = parts.find((part) => part.profileStatus !== "ready");
  if (unreadable) {
    return fail(
      publicationId,
      table.id,
      `Part "${unreadable.name}" could not be read: ${unreadable.profileError ?? "it has no profile."}`,
    );
  }
  const columns = parts[0]!.columns as Column[];
  for (const part of parts.slice(1)) {
    const difference = columnDifference(columns, part.columns as Column[]);
    if (difference) {
      return fail(
        publicationId,
        table.id,
        `Part "${part.name}" has other columns than part "${parts[0]!.name}": ${difference}. Every part of a version has the same columns.`,
      );
    }
  }
  const reserved = reservedColumnProblem(columns);
  if (reserved) return fail(publicationId, table.id, reserved);
  const missingKey = table.key.find((key) => !columns.some((column) => column.name === key));
  if (missingKey) {
    return fail(
      publicationId,
      table.id,
      `The key column "${missingKey}" is not a column of this publication (its columns: ${columns.map((column) => column.name).join(", ")}).`,
    );
  }
  const previous =
    table.currentVersion === null
      ? null
      : await db().tableVersion.findUniqueOrThrow({
          where: { tableId_version: { tableId: table.id, version: table.currentVersion } },
          select: { version: true, columns: true, rows: true, figures: true },
        });
  if (previous) {
    const change = columnEvolutionProblem(previous.columns as Column[], columns, previous.version);
    if (change) return fail(publicationId, table.id, change);
  }

  for (const part of parts) {
    const parquet = part.renditions[0];
    if (parquet?.status === "failed") {
      return fail(publicationId, table.id, `Part "${part.name}" could not be made into Parquet: ${parquet.error}`);
    }
    if (!parquet) await requestParquet(part.id);
    if (parquet?.status !== "ready") return "waiting";
  }

  const version = (table.currentVersion ?? 0) + 1;
  const makeChanges = async () =>
    makeChangeFile({
      orderId: table.orderId,
      table,
      version,
      parts,
      columns: columns.map((column) => column.name),
      previous: previous ? await versionParts(table.id, previous.version) : null,
    });
  // A change file of inserts only (a first or an append version) does not depend on the key: both are
  // made at once, in two engine processes. A diff against the previous version joins on the key, so it
  // waits for the key to hold (a key found many times would multiply the join's rows).
  const insertsOnly = !previous || table.mode === "append";
  // The quality figures are measured in a third engine task meanwhile (one read of the new parts; the
  // previous version only through its stored figures), awaited last: it runs on while the change file
  // is made after the key check. A released publication has them.
  const released = releasedReport(publication);
  const measuring = qualityChecksOn() && !released ? measurePublication(parts, previous?.figures) : undefined;
  const measuredSettled = Promise.allSettled([measuring]).then(([settled]) => settled);
  const [keyChecked, early] = await Promise.allSettled([
    table.key.length > 0 ? keyProblem(parts, table.key, table.mode === "snapshot") : undefined,
    insertsOnly ? makeChanges() : undefined,
  ]);
  const madeEarly = early.status === "fulfilled" && early.value && !("error" in early.value) ? early.value : undefined;
  if (keyChecked.status === "rejected" || keyChecked.value) {
    if (madeEarly) await discardChangeFile(madeEarly);
    if (keyChecked.status === "rejected") throw keyChecked.reason;
    return fail(publicationId, table.id, keyChecked.value!);
  }
  if (early.status === "rejected") throw early.reason;
  const changeFile = early.value ?? (await makeChanges());
  if ("error" in changeFile) return fail(publicationId, table.id, changeFile.error);
  const measuredOutcome = await measuredSettled;
  if (measuredOutcome.status === "rejected") {
    await discardChangeFile(changeFile);
    throw measuredOutcome.reason;
  }
  const measured = measuredOutcome.value;
  if (measured && "error" in measured) {
    await discardChangeFile(changeFile);
    return fail(publicationId, table.id, measured.error);
  }
  const report = measured
    ? qualityReport({
        measured,
        columns,
        previous,
        changes: changeFile.changes,
        append: table.mode === "append",
        checks: table.checks,
      })
    : (released?.report ?? null);
  const figures = measured ? measured.figures : (released?.figures ?? null);
  const verdict = released ? null : report ? verdictOf(report) : null;
  if (report && figures && verdict?.held) {
    // Not a version: its change file is made again if it is released (./quality.ts).
    await discardChangeFile(changeFile);
    return (await holdPublication(publicationId, table, { report, figures })) ? "held" : "skipped";
  }
  const quality = released ? releasedQuality(released.report, released.reason) : (verdict?.quality ?? null);

  const rows = parts.reduce((sum, part) => sum + (part.rows ?? 0n), 0n);
  const made = await jobTransaction(async (tx) => {
    const [locked] = await tx.$queryRaw<{ current_version: number | null; buyer_id: string; order_status: string }[]>`
      SELECT t.current_version, o.buyer_id, o.status AS order_status FROM order_tables t JOIN orders o ON o.id = t.order_id
      WHERE t.id = ${table.id} FOR UPDATE OF t`;
    const still = await tx.tablePublication.findUnique({ where: { id: publicationId }, select: { status: true } });
    // Another worker made it meanwhile, or the table moved on since the checks above: look again.
    if (!locked || still?.status !== "processing" || locked.current_version !== table.currentVersion) return false;
    const now = new Date();
    await tx.tableVersion.create({
      data: {
        tableId: table.id,
        version,
        publicationId,
        rows: table.mode === "append" && previous ? previous.rows + rows : rows,
        columns: columns as Prisma.InputJsonValue,
        createdAt: now,
        changes: changeFile.changes,
        changeFileId: await recordChangeFile(tx, table.orderId, changeFile),
        quality: quality ?? undefined,
        figures: (figures ?? undefined) as Prisma.InputJsonValue | undefined,
      },
    });
    await tx.orderTable.update({ where: { id: table.id }, data: { currentVersion: version } });
    await tx.tablePublication.update({
      where: { id: publicationId },
      data: {
        status: "ready",
        version,
        finishedAt: now,
        report: (report ?? undefined) as Prisma.InputJsonValue | undefined,
        figures: (figures ?? undefined) as Prisma.InputJsonValue | undefined,
      },
    });
    // Announced with the version, or not at all (the event commits with it).
    const data = JSON.parse(
      await versionJson(locked.buyer_id, table.orderId, table.name, version, (text, values) =>
        tx.$queryRawUnsafe(text, ...values),
      ),
    );
    // With its freshness: a late table's next version ends the lateness (`late: false`).
    const freshness = JSON.parse(await tableFreshnessText(table.id, (text, args) => tx.$queryRawUnsafe(text, ...args)));
    await emitEvent(tx, {
      buyerId: locked.buyer_id,
      type: "table.updated",
      data: { order_id: table.orderId, table: table.name, ...data, freshness },
      at: now,
    });
    // A delivered order's new version goes to the buyer's export destinations (lib/exports).
    if (locked.order_status === "delivered") {
      await queueExportRuns(tx, {
        buyerId: locked.buyer_id,
        orderId: table.orderId,
        trigger: "table.updated",
        table: table.name,
        version,
        at: now,
      });
    }
    await queueNext(tx, table.id);
    return true;
  }).catch(async (error: unknown) => {
    await discardChangeFile(changeFile);
    throw error;
  });
  if (!made) {
    await discardChangeFile(changeFile);
    await sendJob(QUEUES.tablePublication, { publicationId });
    return "waiting";
  }
  countTablePublication("ready");
  logger().info({ publicationId, table: table.name, version, quality: quality?.status }, "table version made");
  return "ready";
}

/**
 * What the job worker would do for every file and publication waiting (profiles, Parquet
 * renditions, each publication's steps), done now in this process: for the demo seed, which loads
 * its data before any worker runs, and for tests that run none. Returns once nothing is left.
 */
export async function processPendingNow(): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const pending = await db().orderFile.findMany({ where: { profileStatus: "pending" }, select: { id: true } });
    for (const { id } of pending) await profileStoredFile(id, { queueRendition: false });
    const unmade = await db().orderFile.findMany({
      where: {
        profileStatus: "ready",
        origin: "delivered",
        renditions: { none: { format: "parquet", status: { in: ["ready", "failed"] } } },
      },
      select: { id: true },
    });
    for (const { id } of unmade) await makeRendition(id, "parquet");
    // Those waiting behind a held publication wait for the operator, not for this loop.
    const processing = await db().tablePublication.findMany({
      where: { status: "processing", table: { publications: { none: { status: "held" } } } },
      orderBy: { seq: "asc" },
      select: { id: true },
    });
    if (pending.length === 0 && unmade.length === 0 && processing.length === 0) return;
    for (const { id } of processing) await advancePublication(id);
  }
  throw new Error("Publications still processing after 20 rounds: see their files' profiles and renditions.");
}

/** Queues the next publication of an order file's table, once the file's profile or Parquet rendition is done. */
export async function continuePublicationOf(fileId: string): Promise<void> {
  const file = await db().orderFile.findUnique({ where: { id: fileId }, select: { publicationId: true } });
  if (file?.publicationId) await sendJob(QUEUES.tablePublication, { publicationId: file.publicationId });
}

/**
 * Queues every publication in processing again (ones whose job was lost, or made by the migration),
 * and the change files versions lack (versions the migration made from files delivered before
 * tables), a batch at a time.
 */
export async function sweepPublications(): Promise<number> {
  const processing = await db().tablePublication.findMany({ where: { status: "processing" }, select: { id: true } });
  for (const { id } of processing) await sendJob(QUEUES.tablePublication, { publicationId: id });
  // A version whose previous one was pruned cannot be compared with it: it keeps no change file.
  const lacking = await db().$queryRaw<{ table_id: string; version: number }[]>`
    SELECT v.table_id, v.version FROM table_versions v
    WHERE v.change_file_id IS NULL AND v.pruned_at IS NULL AND (v.version = 1 OR EXISTS (
      SELECT 1 FROM table_versions p WHERE p.table_id = v.table_id AND p.version = v.version - 1 AND p.pruned_at IS NULL))
    ORDER BY v.created_at LIMIT ${CHANGE_FILE_BACKFILL_BATCH}`;
  for (const { table_id, version } of lacking) {
    await sendJob(QUEUES.tablePublication, { changeFileOf: { tableId: table_id, version } });
  }
  return processing.length + lacking.length;
}

const CHANGE_FILE_BACKFILL_BATCH = 20;

export async function handlePublicationJob(data: Record<string, unknown>): Promise<void> {
  const backfill = data.changeFileOf as { tableId?: unknown; version?: unknown } | undefined;
  if (typeof backfill?.tableId === "string" && typeof backfill.version === "number") {
    await backfillChangeFile(backfill.tableId, backfill.version);
    return;
  }
  if (typeof data.publicationId !== "string") return;
  const outcome = await advancePublication(data.publicationId);
  if (outcome !== "skipped") logger().info({ publicationId: data.publicationId, outcome }, "table publication");
}

/** Makes the change file a version lacks (made before change files existed); idempotent. */
async function backfillChangeFile(tableId: string, version: number): Promise<void> {
  const table = await db().orderTable.findUnique({
    where: { id: tableId },
    select: { orderId: true, name: true, mode: true, key: true },
  });
  const current = await versionParts(tableId, version);
  if (!table || !current || current.parts.some((part) => !part.renditions[0]?.storageKey)) return;
  const existing = await db().tableVersion.findUnique({
    where: { tableId_version: { tableId, version } },
    select: { changeFileId: true },
  });
  if (existing?.changeFileId) return;
  const previous = version > 1 ? await versionParts(tableId, version - 1) : null;
  if (version > 1 && !previous) return;
  const changeFile = await makeChangeFile({ orderId: table.orderId, table, version, ...current, previous });
  if ("error" in changeFile) {
    logger().warn({ tableId, version, error: changeFile.error }, "change file not backfilled");
    return;
  }
  const recorded = await db()
    .$transaction(async (tx) => {
      const updated = await tx.tableVersion.updateMany({
        where: { tableId, version, changeFileId: null },
        data: { changes: changeFile.changes },
      });
      if (updated.count === 0) return false;
      await tx.tableVersion.update({
        where: { tableId_version: { tableId, version } },
        data: { changeFileId: await recordChangeFile(tx, table.orderId, changeFile) },
      });
      return true;
    })
    .catch(async (error: unknown) => {
      await discardChangeFile(changeFile);
      throw error;
    });
  if (!recorded) await discardChangeFile(changeFile);
}

async function fail(publicationId: string, tableId: string, error: string): Promise<"failed"> {
  await jobTransaction(async (tx) => {
    const failed = await tx.tablePublication.updateMany({
      where: { id: publicationId, status: "processing" },
      data: { status: "failed", error, finishedAt: new Date() },
    });
    if (failed.count === 1) await queueNext(tx, tableId);
  });
  countTablePublication("failed");
  logger().info({ publicationId, error }, "table publication failed");
  return "failed";
}

/** The table's next publication in processing, if any, gets its turn. */
export async function queueNext(tx: Prisma.TransactionClient, tableId: string): Promise<void> {
  const next = await tx.tablePublication.findFirst({
    where: { tableId, status: "processing" },
    orderBy: { seq: "asc" },
    select: { id: true },
  });
  if (next) await sendJob(QUEUES.tablePublication, { publicationId: next.id }, { tx });
}
