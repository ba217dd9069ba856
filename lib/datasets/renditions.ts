import { createReadStream } from "node:fs";
import path from "node:path";
import { db, Prisma } from "../db/client";
import { errorFields, logger } from "../log";
import { driverOf, fileStorage } from "../storage";
import { duckdbMessageFor, withTempDir } from "../engine/engine";
import { runEngineTask } from "../engine/engine-pool";
import { RENDITION_CONTENT_TYPES, type Compression, type DataFormat, type RenditionFormat } from "../data-formats";
import type { ColumnStats } from "../engine/parquet-stats";
import { withoutNul, type Json } from "../engine/preview-values";
import type { Column } from "../engine/columns";
import { localCopy } from "./source";

/**
 * Writes the data of `source` (a readable path) as `format` into `target` (both in `workDir`, a
 * private temporary directory), in an engine process (./engine-tasks.ts `rendition`). Parquet is
 * written with the column types Delta Sharing advertises, given the file's profiled `columns`, and
 * answers each column's null count and its per-column statistics (./parquet-stats.ts) from its footer.
 */
export async function writeRendition(
  source: string,
  from: { format: DataFormat; compression: Compression; columns?: Column[] },
  format: RenditionFormat,
  target: string,
  workDir: string,
): Promise<{ nullCounts: Record<string, number> | null; stats: ColumnStats | null }> {
  return runEngineTask("rendition", { source, from, format, target }, { directory: workDir, readable: [source] });
}

/**
 * Makes one rendition of a profiled file and stores it through the storage driver beside the
 * original, with its own size and sha256; its version goes up when it replaces an earlier one.
 * A file whose data cannot be written (or is not profiled) gets a failed rendition with the reason.
 * Errors reaching the store or the database are thrown (the job is retried).
 */
export async function makeRendition(fileId: string, format: RenditionFormat): Promise<"ready" | "failed" | "skipped"> {
  const file = await db().orderFile.findUnique({
    where: { id: fileId },
    select: {
      id: true,
      orderId: true,
      name: true,
      format: true,
      compression: true,
      storageKey: true,
      profileStatus: true,
      columns: true,
    },
  });
  if (!file) return "skipped";
  if (file.profileStatus !== "ready" || file.format === "binary") {
    await recordFailure(fileId, format, "The file has no readable data to convert (see its profile).");
    return "failed";
  }
  const previous = await db().fileRendition.findUnique({
    where: { fileId_format: { fileId, format } },
    select: { storageKey: true, version: true, status: true },
  });
  let columnStats: ColumnStats | null = null;
  const stored = await withTempDir(async (workDir) => {
    const source = await localCopy(file.storageKey, workDir);
    const target = path.join(workDir, `rendition.${format}`);
    try {
      const { nullCounts, stats } = await writeRendition(
        source,
        {
          format: file.format as DataFormat,
          compression: file.compression as Compression,
          columns: (file.columns ?? undefined) as Column[] | undefined,
        },
        format,
        target,
        workDir,
      );
      if (nullCounts) await recordNullability(file.id, nullCounts);
      columnStats = stats;
    } catch (error) {
      logger().warn({ fileId, format, ...errorFields(error) }, "rendition not made");
      const reason = duckdbMessageFor(error, file.name, [source, file.storageKey, workDir]);
      return { error: `The ${format} rendition could not be made: ${reason}` };
    }
    return fileStorage().put(createReadStream(target), file.orderId, { contentType: RENDITION_CONTENT_TYPES[format] });
  });
  if ("error" in stored) {
    await recordFailure(fileId, format, stored.error);
    return "failed";
  }
  await recordReadyRendition(db(), fileId, format, stored, columnStats, previous);
  await removeReplacedRendition(fileId, format, previous?.storageKey, stored.key);
  return "ready";
}

/** Records a rendition made and stored (`previous`: the row it replaces, read before), in `tx`. */
export async function recordReadyRendition(
  tx: Prisma.TransactionClient,
  fileId: string,
  format: RenditionFormat,
  stored: { key: string; size: number; sha256: string },
  stats: ColumnStats | null,
  previous: { version: number; status: string } | null,
): Promise<void> {
  // Column names may hold a NUL, which PostgreSQL's jsonb refuses (text bounds holding one are left out already).
  const storedStats = stats ? (withoutNul(stats as unknown as Json) as Prisma.InputJsonValue) : Prisma.DbNull;
  await tx.fileRendition.upsert({
    where: { fileId_format: { fileId, format } },
    create: {
      fileId,
      format,
      status: "ready",
      storageKey: stored.key,
      size: BigInt(stored.size),
      sha256: stored.sha256,
      stats: storedStats,
    },
    update: {
      status: "ready",
      storageKey: stored.key,
      size: BigInt(stored.size),
      sha256: stored.sha256,
      stats: storedStats,
      error: null,
      version: previous?.status === "ready" ? previous.version + 1 : (previous?.version ?? 1),
      updatedAt: new Date(),
    },
  });
}

/** Removes a replaced rendition's object, when it is in the store in use (best effort: a leftover is logged). */
export async function removeReplacedRendition(
  fileId: string,
  format: RenditionFormat,
  previousKey: string | null | undefined,
  newKey: string,
): Promise<void> {
  if (!previousKey || previousKey === newKey || driverOf(previousKey) !== fileStorage().driver) return;
  await fileStorage()
    .delete(previousKey)
    .catch((error: unknown) => logger().warn({ fileId, format, ...errorFields(error) }, "old rendition not removed"));
}

/** Each column's `nullable` made exact by the null counts of its Parquet rendition's statistics. */
export function exactNullability(columns: Column[], nullCounts: Record<string, number>): Column[] {
  return columns.map((column) => {
    const nulls = nullCounts[column.name];
    return nulls === undefined ? column : { ...column, nullable: nulls > 0 };
  });
}

async function recordFailure(fileId: string, format: RenditionFormat, error: string): Promise<void> {
  await db().fileRendition.upsert({
    where: { fileId_format: { fileId, format } },
    create: { fileId, format, status: "failed", error },
    update: { status: "failed", error, updatedAt: new Date() },
  });
}

/**
 * Which columns hold nulls, from the null counts DuckDB wrote into the Parquet rendition's
 * statistics, recorded in the file's profile.
 */
async function recordNullability(fileId: string, nullCounts: Record<string, number>): Promise<void> {
  const { columns } = await db().orderFile.findUniqueOrThrow({ where: { id: fileId }, select: { columns: true } });
  if (!Array.isArray(columns)) return;
  await db().orderFile.update({
    where: { id: fileId },
    data: { columns: exactNullability(columns as Column[], nullCounts) },
  });
}
