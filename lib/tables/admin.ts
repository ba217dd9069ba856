import { db } from "../db/client";
import { AppError } from "../errors";
import { logger, errorFields } from "../log";
import { findOrderForOperator } from "../orders/files";
import { driverOf, fileStorage } from "../storage";
import { QUALITY_BEFORE_CHECKS, type Quality, type QualityReport } from "../schemas/quality";

/** What operators do with a table beyond publishing (./publish.ts): read its history, prune it. */

export type VersionHistory = {
  versions: {
    version: number;
    created_at: string;
    rows: number;
    changes: { inserted: number; updated: number; deleted: number } | null;
    quality: Quality;
    pruned: boolean;
  }[];
  publications: {
    id: string;
    status: "processing" | "held" | "ready" | "failed";
    error: string | null;
    created_at: string;
    version: number | null;
    parts: string[];
    /**
     * Its stored parts. Only the operator sees those of a publication that is no version (Part 8);
     * a failed or rejected one's are removed after a while (./failed-parts.ts), its names stay.
     */
    files: { id: string; name: string; size: number }[];
    /** Its quality report once made (Part 6), else null. */
    report: QualityReport | null;
  }[];
};

async function tableOf(orderId: string, name: string) {
  await findOrderForOperator(orderId);
  const table = await db().orderTable.findUnique({
    where: { orderId_name: { orderId, name } },
    select: { id: true, name: true, currentVersion: true },
  });
  if (!table) throw new AppError("table_not_found", `Order ${orderId} has no table named ${JSON.stringify(name)}.`);
  return table;
}

/** `table:versions`: the table's versions, newest first, and its publications (an unfinished upload counts as processing). */
export async function tableHistory(orderId: string, name: string): Promise<VersionHistory> {
  const table = await tableOf(orderId, name);
  const [versions, publications] = await Promise.all([
    db().tableVersion.findMany({
      where: { tableId: table.id },
      orderBy: { version: "desc" },
      select: { version: true, createdAt: true, rows: true, changes: true, quality: true, prunedAt: true },
    }),
    db().tablePublication.findMany({
      where: { tableId: table.id },
      orderBy: { createdAt: "desc" },
      select: {
        id: true,
        status: true,
        error: true,
        createdAt: true,
        version: true,
        partNames: true,
        report: true,
        parts: {
          where: { origin: "delivered" },
          orderBy: { name: "asc" },
          select: { id: true, name: true, size: true },
        },
      },
    }),
  ]);
  return {
    versions: versions.map((version) => ({
      version: version.version,
      created_at: version.createdAt.toISOString(),
      rows: Number(version.rows),
      changes: version.changes as VersionHistory["versions"][number]["changes"],
      quality: (version.quality as Quality | null) ?? QUALITY_BEFORE_CHECKS,
      pruned: version.prunedAt !== null,
    })),
    publications: publications.map((publication) => ({
      id: publication.id,
      status: publication.status === "uploading" ? "processing" : publication.status,
      error: publication.error,
      created_at: publication.createdAt.toISOString(),
      version: publication.version,
      parts: publication.partNames,
      files: publication.parts.map((part) => ({ id: part.id, name: part.name, size: Number(part.size) })),
      report: publication.report as QualityReport | null,
    })),
  };
}

export type PruneReport = { kept: number[]; pruned: number[]; files_deleted: number; bytes_deleted: number };

/**
 * `table:prune --keep N`: the parts, renditions and change files of every version but the last N
 * are deleted; the versions stay recorded as pruned (answered as not found). Rows go first, in one
 * transaction, then the objects: a prune killed midway leaves at worst an object no row points at,
 * never a row pointing at a missing object. Objects registered from the seller's bucket are never
 * deleted. For an append table this drops the oldest rows from the table: its data is then the last
 * N versions'.
 */
export async function pruneTable(orderId: string, name: string, keep: number): Promise<PruneReport> {
  if (!Number.isInteger(keep) || keep < 1) {
    throw new AppError(
      "invalid_argument",
      "--keep must be a whole number of at least 1 (the current version always stays).",
    );
  }
  const table = await tableOf(orderId, name);
  const versions = await db().tableVersion.findMany({
    where: { tableId: table.id, prunedAt: null },
    orderBy: { version: "desc" },
    select: { version: true, publicationId: true, changeFileId: true },
  });
  const kept = versions.slice(0, keep);
  const doomed = versions.slice(keep);
  const files = await db().orderFile.findMany({
    where: {
      OR: [
        { publicationId: { in: doomed.map((version) => version.publicationId) } },
        { id: { in: doomed.flatMap((version) => (version.changeFileId ? [version.changeFileId] : [])) } },
      ],
    },
    select: {
      id: true,
      size: true,
      storageKey: true,
      registered: true,
      renditions: { select: { storageKey: true, size: true } },
    },
  });
  const objects = files.flatMap((file) => [
    ...(file.registered ? [] : [{ key: file.storageKey, size: Number(file.size) }]),
    ...file.renditions.flatMap((rendition) =>
      rendition.storageKey ? [{ key: rendition.storageKey, size: Number(rendition.size ?? 0) }] : [],
    ),
  ]);
  await db().$transaction(async (tx) => {
    await tx.tableVersion.updateMany({
      where: { tableId: table.id, version: { in: doomed.map((version) => version.version) } },
      data: { prunedAt: new Date(), changeFileId: null },
    });
    await tx.orderFile.deleteMany({ where: { id: { in: files.map((file) => file.id) } } });
  });
  let bytes = 0;
  for (const object of objects) {
    // Objects of another driver than the configured one (before storage:migrate switched) are left.
    if (driverOf(object.key) !== fileStorage().driver) continue;
    await fileStorage()
      .delete(object.key)
      .then(
        () => (bytes += object.size),
        (error: unknown) => logger().warn({ key: object.key, ...errorFields(error) }, "pruned object not deleted"),
      );
  }
  return {
    kept: kept.map((version) => version.version),
    pruned: doomed.map((version) => version.version),
    files_deleted: files.length,
    bytes_deleted: bytes,
  };
}
