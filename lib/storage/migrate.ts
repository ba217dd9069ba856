import { RENDITION_CONTENT_TYPES, type RenditionFormat } from "../data-formats";
import { db } from "../db/client";
import { hashStream, localStorage } from "./index";
import { readS3Object, S3Storage } from "./s3";

export type MigrationProgress = { done: number; total: number; bytesDone: number; bytesTotal: number };

export type MigrationReport = {
  dryRun: boolean;
  total: number;
  migrated: number;
  bytes: number;
  failed: { id: string; reason: string }[];
  /** In a dry run: what would be copied. */
  planned: { id: string; from: string; to: string; size: number }[];
};

/**
 * Copies every locally stored file, and every rendition of one (lib/datasets), to S3_BUCKET (under S3_PREFIX, keeping its local key) and
 * switches its row, one file at a time:
 * 1. upload from the local file, hashing on the way: the local bytes must still match the recorded
 *    sha256 and size (else the file is reported and left alone);
 * 2. read the object back from the store and hash it: what landed must match too;
 * 3. switch the row (only if it still points at the local file), then delete the local copy
 *    unless `keepLocal`.
 * Killed at any point, a rerun picks up where it stopped: switched rows are done, anything else is
 * copied again (an interrupted multipart upload never becomes a visible object).
 */
export async function migrateLocalFilesToS3(options: {
  dryRun?: boolean;
  keepLocal?: boolean;
  signal?: AbortSignal;
  onProgress?: (progress: MigrationProgress) => void;
}): Promise<MigrationReport> {
  const s3 = new S3Storage();
  const files = await locallyStoredObjects();
  const report: MigrationReport = {
    dryRun: options.dryRun ?? false,
    total: files.length,
    migrated: 0,
    bytes: 0,
    failed: [],
    planned: [],
  };
  const progress = {
    done: 0,
    total: files.length,
    bytesDone: 0,
    bytesTotal: files.reduce((sum, file) => sum + Number(file.size), 0),
  };
  options.onProgress?.(progress);
  for (const file of files) {
    const size = Number(file.size);
    const objectKey = s3.prefixedKey(file.storage_key);
    if (report.dryRun) {
      report.planned.push({ id: file.id, from: file.storage_key, to: s3.location(objectKey), size });
    } else {
      try {
        const stored = await s3.putAt(objectKey, localStorage().read(file.storage_key), {
          contentType: file.content_type,
          signal: options.signal,
        });
        if (stored.sha256 !== file.sha256 || stored.size !== size) {
          await s3.delete(stored.key).catch(() => {});
          throw new Error(
            `the local file no longer matches its record (sha256 ${stored.sha256}, ${stored.size} bytes)`,
          );
        }
        const landed = await hashStream((await readS3Object(stored.key)).body);
        if (landed.sha256 !== file.sha256 || landed.size !== size) {
          throw new Error(`the copy in ${stored.key} does not match (sha256 ${landed.sha256}, ${landed.size} bytes)`);
        }
        const count = await file.switchTo(stored.key);
        if (count === 1 && !options.keepLocal) await localStorage().delete(file.storage_key);
        report.migrated++;
        report.bytes += size;
      } catch (error) {
        if (options.signal?.aborted) throw error;
        report.failed.push({ id: file.id, reason: (error as Error).message });
      }
    }
    progress.done++;
    progress.bytesDone += size;
    options.onProgress?.(progress);
  }
  return report;
}

type LocalObject = {
  /** The file's id, or `fil_… (parquet)` for a rendition. */
  id: string;
  storage_key: string;
  size: bigint;
  sha256: string;
  content_type: string;
  /** Points the row at its new location if it still points at the local one; how many rows did. */
  switchTo: (location: string) => Promise<number>;
};

/** Files and ready renditions whose bytes are in local storage, files first, oldest first. */
async function locallyStoredObjects(): Promise<LocalObject[]> {
  const files = await db().$queryRaw<Omit<LocalObject, "switchTo">[]>`
    SELECT id, storage_key, size, sha256, content_type FROM order_files
    WHERE storage_key NOT LIKE 's3://%' ORDER BY created_at, id`;
  const renditions = await db().$queryRaw<
    { file_id: string; format: RenditionFormat; storage_key: string; size: bigint; sha256: string }[]
  >`
    SELECT file_id, format, storage_key, size, sha256 FROM file_renditions
    WHERE status = 'ready' AND storage_key NOT LIKE 's3://%' ORDER BY created_at, file_id, format`;
  return [
    ...files.map((file) => ({
      ...file,
      switchTo: async (location: string) =>
        (
          await db().orderFile.updateMany({
            where: { id: file.id, storageKey: file.storage_key },
            data: { storageKey: location },
          })
        ).count,
    })),
    ...renditions.map(({ file_id: fileId, format, ...rendition }) => ({
      ...rendition,
      id: `${fileId} (${format})`,
      content_type: RENDITION_CONTENT_TYPES[format],
      switchTo: async (location: string) =>
        (
          await db().fileRendition.updateMany({
            where: { fileId, format, storageKey: rendition.storage_key },
            data: { storageKey: location },
          })
        ).count,
    })),
  ];
}
