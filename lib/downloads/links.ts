import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { db } from "../db/client";
import { RENDITION_CONTENT_TYPES, RENDITION_FORMATS, renditionName, subsetName } from "../data-formats";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { countDownloadRedirect } from "../metrics";
import { notDelivered } from "../orders/queries";
import { SEEN_FILE_WHERE } from "../orders/seen-files";
import { driverOf, localStorage } from "../storage";
import { presignedGetUrl } from "../storage/s3";
import { contentDisposition } from "./http";
import { signDownloadToken, verifyDownloadToken } from "./token";

/**
 * Signed download links, the domain side: what a link is made of and what it serves (the file or
 * rendition, the order still delivered, the bytes as recorded). How it is served over HTTP (ranges,
 * ETag, HEAD, streaming) is lib/http/download-link.ts.
 */

/** Where signed links are served: by the app's own HTTP server (lib/http/download-link.ts). */
export const DOWNLOAD_PATH = "/api/dl";

export type DownloadTarget = { id: string; name: string; contentType: string; storageKey: string };

/**
 * A link to one file's bytes, valid for DOWNLOAD_LINK_TTL_SECONDS and usable without an API key:
 * for a file in object storage a presigned GET of the store (the bytes never pass through this
 * server), for a local file a link signed with AUTH_SECRET and served by serveDownload.
 */
export async function downloadUrl(file: DownloadTarget, origin: string, now = new Date()): Promise<string> {
  const driver = driverOf(file.storageKey);
  countDownloadRedirect(driver);
  if (driver === "s3") {
    return presignedGetUrl(
      file.storageKey,
      { contentDisposition: contentDisposition(file.name), contentType: file.contentType },
      DOWNLOAD_LINK_TTL_SECONDS,
    );
  }
  const expiresAt = new Date(now.getTime() + DOWNLOAD_LINK_TTL_SECONDS * 1000);
  return `${origin.replace(/\/+$/, "")}${DOWNLOAD_PATH}/${signDownloadToken({ fileId: file.id, expiresAt })}`;
}

/** What a valid link serves: a file in object storage (a fresh presigned URL), or a local file of `size` bytes. */
export type LinkedObject =
  { store: "s3"; url: string } | { store: "local"; file: Awaited<ReturnType<typeof servedObject>>; size: number };

/**
 * What the link `token` serves now, or why not (an AppError: invalid or expired link, file gone,
 * order no longer delivered). The order's status is read on every call, so a link stops working
 * as soon as the order is no longer delivered.
 */
export async function linkedObject(token: string, now: Date): Promise<LinkedObject> {
  const { fileId: servedId } = verifyDownloadToken(token, now);
  const file = await servedObject(servedId);
  if (file.order.status !== "delivered") throw notDelivered(file.order.id, file.order.status);
  // Moved to object storage since this link was made (storage:migrate): the store serves it.
  if (driverOf(file.storageKey) === "s3") return { store: "s3", url: await downloadUrl(file, "", now) };
  const size = await localStorage().size(file.storageKey);
  // Serving bytes that differ from the recorded file would break its ETag and checksum promise.
  if (size !== Number(file.size)) {
    throw new Error(`Stored object ${file.storageKey} has ${size} bytes; the database records ${file.size}.`);
  }
  return { store: "local", file, size };
}

/**
 * What a link's id names: a file (`fil_…`), one of its renditions (`fil_….parquet`) or a table subset (`sub_…`), with what
 * serving it needs. Only this server signs ids, but a malformed one must never reach PostgreSQL
 * (a NUL byte is an error there).
 */
async function servedObject(servedId: string) {
  if (servedId.startsWith("sub_")) return servedSubset(servedId);
  const [fileId = "", format, ...rest] = servedId.split(".");
  const rendition = format === undefined ? undefined : RENDITION_FORMATS.find((known) => known === format);
  if (!isTypedId("fil", fileId) || rest.length > 0 || (format !== undefined && !rendition)) {
    throw new AppError("file_not_found", "This file no longer exists.");
  }
  // Only what the buyer may see (lib/orders/seen-files.ts), as every door to a file.
  const file = await db().orderFile.findFirst({
    where: { id: fileId, ...SEEN_FILE_WHERE },
    select: {
      id: true,
      name: true,
      size: true,
      contentType: true,
      sha256: true,
      storageKey: true,
      createdAt: true,
      order: { select: { id: true, status: true } },
      renditions: {
        where: { format: rendition, status: "ready" },
        select: { storageKey: true, size: true, sha256: true, updatedAt: true },
      },
    },
  });
  if (!file) throw new AppError("file_not_found", `File ${fileId} no longer exists.`);
  if (!rendition) return file;
  const made = file.renditions[0];
  if (!made?.storageKey || made.size === null || !made.sha256) {
    throw new AppError("file_not_found", `File ${fileId} has no ${rendition} rendition any more.`);
  }
  return {
    ...file,
    id: servedId,
    name: renditionName(file.name, rendition),
    contentType: RENDITION_CONTENT_TYPES[rendition],
    storageKey: made.storageKey,
    size: made.size,
    sha256: made.sha256,
    createdAt: made.updatedAt,
  };
}

/** A ready table subset (lib/explore/subsets.ts) as a link serves it; gone once swept. */
async function servedSubset(subsetId: string) {
  if (!isTypedId("sub", subsetId)) throw new AppError("file_not_found", "This file no longer exists.");
  const subset = await db().tableSubset.findUnique({
    where: { id: subsetId },
    select: {
      format: true,
      version: true,
      status: true,
      storageKey: true,
      size: true,
      sha256: true,
      createdAt: true,
      table: { select: { name: true } },
      order: { select: { id: true, status: true } },
    },
  });
  if (subset?.status !== "ready" || !subset.storageKey || subset.size === null || !subset.sha256) {
    throw new AppError("file_not_found", "This subset no longer exists: ask for it again.");
  }
  return {
    id: subsetId,
    name: subsetName(subset.table.name, subset.version, subset.format),
    contentType: RENDITION_CONTENT_TYPES[subset.format],
    storageKey: subset.storageKey,
    size: subset.size,
    sha256: subset.sha256,
    createdAt: subset.createdAt,
    order: subset.order,
  };
}
