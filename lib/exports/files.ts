import { promises as fs } from "node:fs";
import { db } from "../db/client";
import { downloadTargetFor } from "../datasets/access";
import { renditionName, RENDITION_CONTENT_TYPES, type RenditionFormat } from "../data-formats";
import { AppError } from "../errors";
import { SEEN_FILE_WHERE } from "../orders/seen-files";
import { driverOf, localStorage } from "../storage";
import { readS3Object } from "../storage/s3";
import type { ExportFormat } from "./config";
import { LocalFile, WHOLE_FILE_BYTES, type ExportSource } from "./targets/target";

/**
 * What a run copies: the files of its order (or, for a table.updated run, of its table version),
 * each as the destination's format asks, and where their bytes are (either storage driver).
 */

/** One file of a run: its bytes' location, size and sha256 as recorded, and what its key is made from. */
export type ExportFile = {
  fileId: string;
  /** The name in the store ({file_name}): the original's, or the rendition's. */
  name: string;
  location: string;
  size: number;
  sha256: string;
  contentType: string;
  /** original, or the rendition format exported. */
  format: "original" | RenditionFormat;
  /** The table version the file is a part of; undefined for a file in no table. */
  table?: { name: string; version: number };
};

export type RunScope = {
  orderId: string;
  trigger: "order.delivered" | "table.updated" | "manual";
  table?: { name: string; version: number };
};

/** The original files a run exports. */
type OriginalFile = {
  id: string;
  name: string;
  size: bigint;
  sha256: string;
  storageKey: string;
  contentType: string;
  format: string;
  profileStatus: string;
  table?: { name: string; version: number };
};

/**
 * The files a run exports, in a stable order: the order's files as the API lists them (contract
 * Part 4), each part of a table with its `{name, version}`. Only files the buyer may see
 * (lib/orders/seen-files.ts): a part of a publication not yet a version is left to the run its
 * version starts, and a failed or rejected publication's parts are never exported; a snapshot
 * table's older parts are not either. A table.updated run takes only that version's parts
 * (`scope.table`).
 */
export async function filesOfRun(scope: RunScope): Promise<OriginalFile[]> {
  const files = await db().orderFile.findMany({
    where: {
      orderId: scope.orderId,
      origin: "delivered",
      ...(scope.table ? { publication: { version: scope.table.version, table: { name: scope.table.name } } } : {}),
      AND: [SEEN_FILE_WHERE],
    },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: {
      id: true,
      name: true,
      size: true,
      sha256: true,
      storageKey: true,
      contentType: true,
      format: true,
      profileStatus: true,
      publication: {
        select: { version: true, table: { select: { name: true, mode: true, currentVersion: true } } },
      },
    },
  });
  return files.flatMap(({ publication, ...file }) => {
    if (!publication) return [file];
    const { table, version } = publication;
    // A snapshot's data is its current version's parts (a table.updated run: its own version's).
    if (!scope.table && table.mode === "snapshot" && version !== table.currentVersion) return [];
    return [{ ...file, table: { name: table.name, version: version! } }];
  });
}

/** A rendition that is still being made: the run waits for it (and asks for it, if nobody has). */
export class RenditionPendingError extends Error {}

/**
 * The files as the destination's format asks: the originals, or each file's rendition in that
 * format. A file already in that format is exported as it is, and so is one that can have no
 * rendition (binary, or its data unreadable): the buyer still gets every file. A rendition not made
 * yet is asked for and the run waits (RenditionPendingError).
 */
export async function exportFilesOf(buyerId: string, scope: RunScope, format: ExportFormat): Promise<ExportFile[]> {
  const originals = await filesOfRun(scope);
  const files: ExportFile[] = [];
  const pending: string[] = [];
  for (const file of originals) {
    const original: ExportFile = {
      fileId: file.id,
      name: file.name,
      location: file.storageKey,
      size: Number(file.size),
      sha256: file.sha256,
      contentType: file.contentType,
      format: "original",
      ...(file.table ? { table: file.table } : {}),
    };
    if (
      format === "original" ||
      file.format === format ||
      file.format === "binary" ||
      file.profileStatus === "failed"
    ) {
      files.push(original);
      continue;
    }
    const rendition = await db().fileRendition.findUnique({
      where: { fileId_format: { fileId: file.id, format } },
      select: { status: true, storageKey: true, size: true, sha256: true },
    });
    if (rendition?.status === "ready" && rendition.storageKey && rendition.size !== null && rendition.sha256) {
      files.push({
        ...original,
        name: renditionName(file.name, format),
        location: rendition.storageKey,
        size: Number(rendition.size),
        sha256: rendition.sha256,
        contentType: RENDITION_CONTENT_TYPES[format],
        format,
      });
    } else if (rendition?.status === "failed") {
      files.push(original); // its data could not be converted: the original still goes
    } else {
      // Asks for it as a download would (the same rule: queued now, or once the file is profiled).
      await downloadTargetFor(buyerId, scope.orderId, file.id, format).catch((error: unknown) => {
        if (!(error instanceof AppError && error.code === "rendition_pending")) throw error;
      });
      pending.push(file.name);
    }
  }
  if (pending.length > 0) {
    throw new RenditionPendingError(
      `Waiting for the ${format} rendition of ${pending.slice(0, 3).join(", ")}${pending.length > 3 ? ` and ${pending.length - 3} more` : ""} to be made.`,
    );
  }
  return files;
}

/**
 * The stored bytes of a file of `size` bytes, from whichever driver holds them: a local file that a
 * store takes in one request (WHOLE_FILE_BYTES) read whole, in one read; a larger local one for the
 * target to read part by part into its own buffers (`onRead` after each read); an object in S3 as the
 * stream the store sends.
 */
export async function openSource(
  location: string,
  size: number,
  { signal, onRead }: { signal: AbortSignal; onRead: () => void },
): Promise<ExportSource> {
  if (driverOf(location) !== "local") return (await readS3Object(location)).body;
  const file = localStorage().pathOf(location);
  return size <= WHOLE_FILE_BYTES ? fs.readFile(file, { signal }) : new LocalFile(file, onRead);
}
