import { db, Prisma } from "../db/client";
import { errorFields, logger } from "../log";
import { jobTransaction, QUEUES, sendJob } from "../jobs";
import { duckdbMessageFor, readerSql, withDuckDB, withTempDir } from "./engine";
import type { Compression, DataFormat, FileFormat } from "./formats";
import { previewRows, withinPreviewSize, type Json } from "./preview-values";
import { checkGzipExpansion, checkLooksLike, localCopy, UnreadableFileError } from "./source";

/** Rows kept for the preview: the API's `limit` goes up to this. */
const PREVIEW_ROWS = 100;

export type Column = { name: string; type: string; nullable: boolean };
export type Profile = { columns: Column[]; rows: number; preview: Json[][] };

type ProfiledFile = {
  id: string;
  name: string;
  format: FileFormat;
  compression: string | null;
  storageKey: string;
};

/**
 * Reads what is inside one file with DuckDB: its columns (name, DuckDB type), its row count and its
 * first PREVIEW_ROWS rows. The count is DuckDB's `count(*)`, which reads every row (a ragged row
 * fails it) without converting every value: as fast as DuckDB counts. Whether a column holds nulls
 * is what DuckDB's schema says here (text formats: any column may) and is made exact from the
 * Parquet rendition's statistics once it exists (./renditions.ts), so no second conversion is paid.
 */
export async function readProfile(file: string, format: DataFormat, compression: Compression): Promise<Profile> {
  await checkLooksLike(file, format, compression);
  if (compression === "gzip") await checkGzipExpansion(file);
  const reader = readerSql(file, format, compression);
  return withDuckDB(async (connection) => {
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${reader}`);
    const columns = described.getRowObjectsJson().map((row) => ({
      name: String(row.column_name),
      type: String(row.column_type),
      nullable: row.null !== "NO",
    }));
    if (columns.length === 0) throw new UnreadableFileError("The file has no columns.");
    const counted = await connection.runAndReadAll(`SELECT count(*) FROM ${reader}`);
    const first = await connection.runAndReadAll(`SELECT * FROM ${reader} LIMIT ${PREVIEW_ROWS}`);
    return {
      columns,
      rows: Number(counted.getRowsJson()[0]?.[0] ?? 0),
      preview: withinPreviewSize(
        previewRows(
          first.getRowsJson() as Json[][],
          columns.map(({ type }) => type),
        ),
      ),
    };
  });
}

/**
 * Profiles a stored file and records the result: `ready` with its profile, or `failed` with a
 * reason a buyer can read (a file DuckDB cannot parse is an answer, not an error: no retry). A
 * profiled file gets its Parquet rendition queued in the same transaction (`queueRendition`).
 * Errors reaching the store or the database are thrown (the job is retried). `pendingOnly`: leave
 * a file profiled meanwhile (by `files:profile` or the demo seed) as it is.
 */
export async function profileStoredFile(
  fileId: string,
  { queueRendition = true, pendingOnly = false }: { queueRendition?: boolean; pendingOnly?: boolean } = {},
): Promise<"ready" | "failed" | "skipped"> {
  const file = await db().orderFile.findUnique({
    where: { id: fileId },
    select: { id: true, name: true, format: true, compression: true, storageKey: true, profileStatus: true },
  });
  if (!file || file.format === "binary") return "skipped";
  if (pendingOnly && file.profileStatus !== "pending") return "skipped";
  const outcome = await withTempDir(
    async (workDir): Promise<{ profile: Profile } | { profile?: never; error: string }> => {
      const path = await localCopy(file.storageKey, workDir);
      try {
        return { profile: await readProfile(path, file.format as DataFormat, file.compression as Compression) };
      } catch (error) {
        return { error: readableReason(error, file, path) };
      }
    },
  );
  await jobTransaction(async (tx) => {
    await tx.orderFile.update({
      where: { id: file.id },
      data: outcome.profile
        ? {
            profileStatus: "ready",
            rows: BigInt(outcome.profile.rows),
            columns: outcome.profile.columns,
            preview: outcome.profile.preview as Prisma.InputJsonValue,
            profileError: null,
            profiledAt: new Date(),
          }
        : {
            profileStatus: "failed",
            rows: null,
            columns: Prisma.DbNull,
            preview: Prisma.DbNull,
            profileError: outcome.error,
            profiledAt: new Date(),
          },
    });
    if (outcome.profile && queueRendition) {
      // Parquet always; CSV or JSON Lines asked for before the profile was done, now.
      const asked = await tx.fileRendition.findMany({
        where: { fileId: file.id, status: "pending", format: { not: "parquet" } },
        select: { format: true },
      });
      for (const format of ["parquet" as const, ...asked.map((rendition) => rendition.format)]) {
        await queueRenditionJob(tx, file.id, format);
      }
    } else if (!outcome.profile) {
      await tx.fileRendition.updateMany({
        where: { fileId: file.id },
        data: {
          status: "failed",
          error: "The file's data could not be read (see its profile).",
          updatedAt: new Date(),
        },
      });
    }
  });
  return outcome.profile ? "ready" : "failed";
}

/** Marks a Parquet (or other) rendition pending and queues the job that makes it, in `tx`. */
async function queueRenditionJob(
  tx: Prisma.TransactionClient,
  fileId: string,
  format: "parquet" | "csv" | "jsonl",
): Promise<void> {
  await tx.fileRendition.upsert({
    where: { fileId_format: { fileId, format } },
    create: { fileId, format, status: "pending" },
    update: { status: "pending", error: null, updatedAt: new Date() },
  });
  await sendJob(QUEUES.datasetRendition, { fileId, format }, { tx });
}

/**
 * What went wrong, as a sentence for the buyer: our own checks' reasons as they are; DuckDB's
 * message with the server's paths replaced by the file's name, one line, without control characters.
 */
function readableReason(error: unknown, file: ProfiledFile, path: string): string {
  if (error instanceof UnreadableFileError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  logger().debug({ fileId: file.id, ...errorFields(error) }, "DuckDB could not read a file");
  if (/maximum line size of \d+ bytes exceeded/i.test(message)) {
    return "A line of the file is longer than 2 MB, more than a row of data can be: it was not read further.";
  }
  if (/out of memory/i.test(message)) {
    return "Reading the file needed more memory than the profile may use (a single value or row is too large).";
  }
  const what = file.format === "parquet" ? "Parquet" : file.format.toUpperCase();
  return `The file could not be read as ${what}: ${duckdbMessageFor(error, file.name, [path, file.storageKey])}`;
}

export type ProfileRun = { profiled: number; failed: number; skipped: number };

/**
 * Profiles the data files of one order (or of every order) that have no profile yet or whose
 * profile failed: files added before profiles existed, or after the store was away. Binary and
 * already profiled files are skipped. Each profiled file's Parquet rendition is queued.
 */
export async function profileFiles(scope: { orderId: string } | "all"): Promise<ProfileRun> {
  const files = await db().orderFile.findMany({
    where: scope === "all" ? {} : { orderId: scope.orderId },
    select: { id: true, profileStatus: true, format: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  const run: ProfileRun = { profiled: 0, failed: 0, skipped: 0 };
  for (const file of files) {
    if (file.format === "binary" || file.profileStatus === "ready") {
      run.skipped++;
      continue;
    }
    const outcome = await profileStoredFile(file.id);
    if (outcome === "ready") run.profiled++;
    else if (outcome === "failed") run.failed++;
    else run.skipped++;
  }
  return run;
}
