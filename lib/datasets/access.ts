import { db, sqlQuery, type SqlRunner } from "../db/client";
import type { DownloadTarget } from "../downloads/links";
import { AppError } from "../errors";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { getDownloadableFile, type DownloadableFile } from "../orders/queries";
import { isOwnFormat, RENDITION_CONTENT_TYPES, renditionName, type RenditionFormat } from "../data-formats";
import type { Json } from "../engine/preview-values";
import type { Column } from "./profile";
import { formatSeconds } from "../format";

/**
 * What the API and the dashboard read of a file's data: previews and renditions, behind the same
 * checks as a download (the order is the buyer's, the file is in it, the order is delivered). No
 * DuckDB here: profiles and renditions are made by the worker (./jobs.ts) and read from the database.
 */

/** A client asked for a rendition that is being made: ask again after this long. */
export const RENDITION_RETRY_AFTER_SECONDS = 5;

export type Preview = { columns: Column[]; rows: Json[][]; total_rows: number };

/** The first `limit` rows of a delivered data file, from its stored profile. */
export async function filePreview(
  buyerId: string,
  orderId: string,
  fileId: string,
  limit: number,
  sql: SqlRunner = sqlQuery,
): Promise<Preview> {
  const file = await getDownloadableFile(buyerId, orderId, fileId, sql);
  refuseWithoutData(file, "has no preview", { pending: "refuse" });
  const profile = await db().orderFile.findUniqueOrThrow({
    where: { id: file.id },
    select: { columns: true, preview: true, rows: true },
  });
  return {
    columns: profile.columns as Column[],
    rows: ((profile.preview ?? []) as Json[][]).slice(0, limit),
    total_rows: Number(profile.rows ?? 0),
  };
}

/**
 * What a download of a delivered file in `format` serves: the original (no format, or its own),
 * or its ready rendition. A rendition not made yet is queued (CSV and JSON Lines are made on first
 * request) and answered 202 rendition_pending with Retry-After; a file without readable data has none.
 */
export async function downloadTargetFor(
  buyerId: string,
  orderId: string,
  fileId: string,
  format: RenditionFormat | undefined,
  sql: SqlRunner = sqlQuery,
): Promise<DownloadTarget> {
  const file = await getDownloadableFile(buyerId, orderId, fileId, sql);
  if (!format || isOwnFormat(file.format, format)) return file;
  refuseWithoutData(file, `cannot be had as ${format}`, { pending: "wait" });
  const rendition = await db().fileRendition.findUnique({
    where: { fileId_format: { fileId: file.id, format } },
    select: { status: true, storageKey: true, error: true },
  });
  if (rendition?.status === "ready" && rendition.storageKey) {
    return {
      id: renditionDownloadId(file.id, format),
      name: renditionName(file.name, format),
      contentType: RENDITION_CONTENT_TYPES[format],
      storageKey: rendition.storageKey,
    };
  }
  if (rendition?.status === "failed") {
    throw new AppError("preview_not_available", `File ${file.id} has no ${format} rendition: ${rendition.error}`);
  }
  if (!rendition) await requestRendition(file.id, format, file.profileStatus === "ready");
  throw new AppError(
    "rendition_pending",
    `File ${file.id} as ${format} is being made. Ask again in ${formatSeconds(RENDITION_RETRY_AFTER_SECONDS)}.`,
    { "Retry-After": String(RENDITION_RETRY_AFTER_SECONDS) },
  );
}

/**
 * Records that a rendition is wanted; its job is queued now if the file is profiled, else by the
 * profile when it is done (a rendition needs the profile's verdict on the data). Two requests at
 * once queue one job.
 */
async function requestRendition(fileId: string, format: RenditionFormat, profiled: boolean): Promise<void> {
  await jobTransaction(async (tx) => {
    const created = await tx.fileRendition.createMany({ data: [{ fileId, format }], skipDuplicates: true });
    if (created.count === 1 && profiled) await sendJob(QUEUES.datasetRendition, { fileId, format }, { tx });
  });
}

/**
 * Binary files and files whose profile failed have no data to show or convert; one not profiled
 * yet has no preview yet, and its renditions wait for the profile.
 */
function refuseWithoutData(file: DownloadableFile, what: string, { pending }: { pending: "refuse" | "wait" }): void {
  if (file.format === "binary") {
    throw new AppError(
      "preview_not_available",
      `File ${file.id} is binary (not CSV, TSV, JSON, JSON Lines or Parquet), so it ${what}: download it as it is.`,
    );
  }
  if (file.profileStatus === "failed") {
    throw new AppError(
      "preview_not_available",
      `File ${file.id} ${what}: its data could not be read. ${file.profileError}`,
    );
  }
  if (file.profileStatus === "pending" && pending === "refuse") {
    throw new AppError(
      "preview_not_available",
      `File ${file.id} is not profiled yet, so it ${what} yet: try again in a minute.`,
    );
  }
}

/** A rendition in a signed download link: the file's id and the format (`fil_….parquet`). */
export const renditionDownloadId = (fileId: string, format: RenditionFormat) => `${fileId}.${format}`;
