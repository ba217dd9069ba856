import { createReadStream } from "node:fs";
import { join } from "node:path";
import { db, Prisma, sqlQuery } from "../db/client";
import { errorFields, logger } from "../log";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { UnreadableFileError } from "../engine/checks";
import { duckdbMessageFor, SPILL_LIMIT, withTempDir } from "../engine/engine";
import { EngineProcessEnded, runEngineTask } from "../engine/engine-pool";
import type { Profile } from "../engine/engine-tasks";
import type { Column } from "../engine/columns";
import { fileStorage, type StoredObject } from "../storage";
import { RENDITION_CONTENT_TYPES, type Compression, type DataFormat, type FileFormat } from "../data-formats";
import type { ColumnStats } from "../engine/parquet-stats";
import { exactNullability, recordReadyRendition, removeReplacedRendition } from "./renditions";
import { withoutNul } from "../engine/preview-values";
import { localCopy } from "./source";

export type { Column, Profile } from "../engine/engine-tasks";

type ProfiledFile = {
  id: string;
  name: string;
  format: FileFormat;
  compression: string | null;
  storageKey: string;
};

/**
 * Reads what is inside one file (columns, row count, first rows) in an engine process
 * (./engine-tasks.ts `profile`), with `workDir` (a private temporary directory) for DuckDB to spill
 * into; one of its own when not given.
 */
export async function readProfile(
  file: string,
  format: DataFormat,
  compression: Compression,
  { workDir, emptyTypes }: { workDir?: string; emptyTypes?: Column[] } = {},
): Promise<Profile> {
  if (!workDir) {
    return withTempDir((directory) => readProfile(file, format, compression, { workDir: directory, emptyTypes }));
  }
  return runEngineTask("profile", { file, format, compression, emptyTypes }, { directory: workDir, readable: [file] });
}

/**
 * The columns of the current version of the table a part is published to: the types a header-only
 * CSV part and a JSON Lines part without a record take (an empty refresh is then a 0-row version
 * for the quality gate, not a change of types or columns).
 */
async function tableColumnsFor(publicationId: string | null, format: FileFormat): Promise<Column[] | undefined> {
  if (!publicationId || (format !== "csv" && format !== "tsv" && format !== "jsonl")) return undefined;
  const [row] = await sqlQuery<{ columns: Column[] }>(
    `SELECT v.columns FROM table_publications p
     JOIN order_tables t ON t.id = p.table_id
     JOIN table_versions v ON v.table_id = t.id AND v.version = t.current_version
     WHERE p.id = $1`,
    [publicationId],
  );
  return row?.columns;
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
    select: {
      id: true,
      orderId: true,
      name: true,
      format: true,
      compression: true,
      storageKey: true,
      profileStatus: true,
      publicationId: true,
    },
  });
  if (!file || file.format === "binary") return "skipped";
  if (pendingOnly && file.profileStatus !== "pending") return "skipped";
  // A text file's Parquet rendition is made from the same read of its data as its profile.
  const withParquet = queueRendition && file.format !== "parquet";
  const previousParquet = withParquet
    ? await db().fileRendition.findUnique({
        where: { fileId_format: { fileId, format: "parquet" } },
        select: { storageKey: true, version: true, status: true },
      })
    : null;
  const outcome = await withTempDir(async (workDir): Promise<ProfileOutcome> => {
    const path = await localCopy(file.storageKey, workDir);
    const source = {
      format: file.format as DataFormat,
      compression: file.compression as Compression,
      emptyTypes: await tableColumnsFor(file.publicationId, file.format),
    };
    if (withParquet) {
      const target = join(workDir, "rendition.parquet");
      const made = await runEngineTask(
        "profileWithParquet",
        { file: path, target, ...source },
        { directory: workDir, readable: [path] },
      ).catch((error: unknown) => {
        if (error instanceof EngineProcessEnded) return { error: readableReason(error, file, path) };
        // Data the profile alone may read (or fail on with its own reason): read it that way below.
        logger().debug({ fileId, ...errorFields(error) }, "profile with Parquet failed; profiling alone");
        return undefined;
      });
      if (made && "error" in made) return made;
      if (made) {
        const stored = await fileStorage().put(createReadStream(target), file.orderId, {
          contentType: RENDITION_CONTENT_TYPES.parquet,
        });
        const columns = exactNullability(made.profile.columns, made.nullCounts);
        return { profile: { ...made.profile, columns }, parquet: { stored, stats: made.stats } };
      }
    }
    try {
      return {
        profile: await readProfile(path, source.format, source.compression, { workDir, emptyTypes: source.emptyTypes }),
      };
    } catch (error) {
      return { error: readableReason(error, file, path) };
    }
  });
  await jobTransaction(async (tx) => {
    await tx.orderFile.update({
      where: { id: file.id },
      data: outcome.profile
        ? {
            profileStatus: "ready",
            rows: BigInt(outcome.profile.rows),
            // PostgreSQL cannot store NUL: such characters are kept as the text \u0000.
            columns: withoutNul(outcome.profile.columns),
            preview: withoutNul(outcome.profile.preview) as Prisma.InputJsonValue,
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
      // Parquet always (made already with the profile, or now); CSV or JSON Lines asked for before
      // the profile was done, now.
      const asked = await tx.fileRendition.findMany({
        where: { fileId: file.id, status: "pending", format: { not: "parquet" } },
        select: { format: true },
      });
      if (outcome.parquet) {
        const { stored, stats } = outcome.parquet;
        await recordReadyRendition(tx, file.id, "parquet", stored, stats, previousParquet);
      }
      const formats = asked.map((rendition) => rendition.format);
      for (const format of outcome.parquet ? formats : ["parquet" as const, ...formats]) {
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
  if (outcome.parquet) {
    await removeReplacedRendition(file.id, "parquet", previousParquet?.storageKey, outcome.parquet.stored.key);
  }
  return outcome.profile ? "ready" : "failed";
}

type ProfileOutcome =
  | { profile: Profile; parquet?: { stored: StoredObject; stats: ColumnStats }; error?: never }
  | { profile?: never; parquet?: never; error: string };

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
  if (error instanceof UnreadableFileError || error instanceof EngineProcessEnded) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  logger().debug({ fileId: file.id, ...errorFields(error) }, "DuckDB could not read a file");
  if (/maximum line size of \d+ bytes exceeded/i.test(message)) {
    return "A line of the file is longer than 2 MB, more than a row of data can be: it was not read further.";
  }
  if (/out of memory/i.test(message) && !SPILL_LIMIT.test(message)) {
    return "Reading the file needed more memory than the profile may use (a single value or row is too large).";
  }
  const what = file.format === "parquet" ? "Parquet" : file.format.toUpperCase();
  return `The file could not be read as ${what}: ${duckdbMessageFor(error, file.name, [path, file.storageKey])}`;
}

export type ProfileRun = {
  profiled: number;
  failed: number;
  skipped: number;
  /** Files that could not be profiled now (the store or the database failed them), each with the reason. */
  errors: { file_id: string; reason: string }[];
};

/**
 * Profiles the data files of one order (or of every order) that have no profile yet or whose
 * profile failed: files added before profiles existed, or after the store was away. Binary and
 * already profiled files are skipped. Each profiled file's Parquet rendition is queued. A file that
 * cannot be profiled now is reported and the rest are profiled all the same.
 */
export async function profileFiles(scope: { orderId: string } | "all"): Promise<ProfileRun> {
  const files = await db().orderFile.findMany({
    where: scope === "all" ? {} : { orderId: scope.orderId },
    select: { id: true, profileStatus: true, format: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  const run: ProfileRun = { profiled: 0, failed: 0, skipped: 0, errors: [] };
  for (const file of files) {
    if (file.format === "binary" || file.profileStatus === "ready") {
      run.skipped++;
      continue;
    }
    try {
      const outcome = await profileStoredFile(file.id);
      if (outcome === "ready") run.profiled++;
      else if (outcome === "failed") run.failed++;
      else run.skipped++;
    } catch (error) {
      logger().error({ fileId: file.id, ...errorFields(error) }, "file not profiled");
      run.errors.push({ file_id: file.id, reason: (error as Error).message ?? String(error) });
    }
  }
  return run;
}
