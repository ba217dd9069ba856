import { createReadStream } from "node:fs";
import path from "node:path";
import { db } from "../db/client";
import { errorFields, logger } from "../log";
import { driverOf, fileStorage } from "../storage";
import { duckdbMessageFor, readerSql, sqlString, withDuckDB, withTempDir } from "./engine";
import { RENDITION_CONTENT_TYPES, type Compression, type DataFormat, type RenditionFormat } from "./formats";
import type { Column } from "./profile";
import { localCopy } from "./source";
import { portableSelectList } from "./spark-schema";

/** DuckDB's COPY options for each rendition: Parquet compressed with zstd; CSV with a header row; JSON one object per line. */
const COPY_OPTIONS: Record<RenditionFormat, string> = {
  parquet: "FORMAT parquet, COMPRESSION zstd",
  csv: "FORMAT csv, HEADER true",
  jsonl: "FORMAT json",
};

/**
 * Writes the data of `source` (a readable path) as `format` into `target`, streaming through
 * DuckDB. Parquet is written with the column types Delta Sharing advertises (./spark-schema.ts),
 * given the file's profiled `columns`.
 */
export async function writeRendition(
  source: string,
  from: { format: DataFormat; compression: Compression; columns?: Column[] },
  format: RenditionFormat,
  target: string,
): Promise<void> {
  const select = format === "parquet" && from.columns?.length ? portableSelectList(from.columns) : "*";
  await withDuckDB(async (connection) => {
    await connection.run(
      `COPY (SELECT ${select} FROM ${readerSql(source, from.format, from.compression)}) TO ${sqlString(target)} (${COPY_OPTIONS[format]})`,
    );
  });
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
  const stored = await withTempDir(async (workDir) => {
    const source = await localCopy(file.storageKey, workDir);
    const target = path.join(workDir, `rendition.${format}`);
    try {
      await writeRendition(
        source,
        {
          format: file.format as DataFormat,
          compression: file.compression as Compression,
          columns: (file.columns ?? undefined) as Column[] | undefined,
        },
        format,
        target,
      );
      if (format === "parquet") await recordNullability(file.id, target);
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
  await db().fileRendition.upsert({
    where: { fileId_format: { fileId, format } },
    create: {
      fileId,
      format,
      status: "ready",
      storageKey: stored.key,
      size: BigInt(stored.size),
      sha256: stored.sha256,
    },
    update: {
      status: "ready",
      storageKey: stored.key,
      size: BigInt(stored.size),
      sha256: stored.sha256,
      error: null,
      version: previous?.status === "ready" ? previous.version + 1 : (previous?.version ?? 1),
      updatedAt: new Date(),
    },
  });
  // The object it replaces is no longer pointed at: removed once the row points at the new one.
  if (
    previous?.storageKey &&
    previous.storageKey !== stored.key &&
    driverOf(previous.storageKey) === fileStorage().driver
  ) {
    await fileStorage()
      .delete(previous.storageKey)
      .catch((error: unknown) => logger().warn({ fileId, format, ...errorFields(error) }, "old rendition not removed"));
  }
  return "ready";
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
 * statistics (metadata only: no data is read again), recorded in the file's profile.
 */
async function recordNullability(fileId: string, parquet: string): Promise<void> {
  const nullCounts = await withDuckDB(async (connection) => {
    const result = await connection.runAndReadAll(
      `SELECT path_in_schema, sum(stats_null_count) FROM parquet_metadata(${sqlString(parquet)}) GROUP BY path_in_schema`,
    );
    return new Map(result.getRowsJson().map(([column, nulls]) => [String(column), Number(nulls ?? 1)]));
  });
  const { columns } = await db().orderFile.findUniqueOrThrow({ where: { id: fileId }, select: { columns: true } });
  if (!Array.isArray(columns)) return;
  const exact = (columns as Column[]).map((column) => {
    const nulls = nullCounts.get(column.name);
    return nulls === undefined ? column : { ...column, nullable: nulls > 0 };
  });
  await db().orderFile.update({ where: { id: fileId }, data: { columns: exact } });
}
