import { RENDITION_CONTENT_TYPES } from "../data-formats";
import { downloadUrl } from "../downloads/links";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { AppError } from "../errors";
import { sharedChangeFiles, sharedParts, sharedVersions } from "./catalog";
import { changeRange } from "./history";
import {
  PROTOCOL_LINE,
  detailOf,
  fileId,
  fileIdHashHeader,
  metadataLine,
  ndjson,
  responseCapabilities,
  tableOf,
  type SharingHandler,
} from "./protocol";
import { formatSeconds } from "../format";

/**
 * `GET .../changes`: the change data feed, one `cdf` line per version of the range: the version's
 * change file (Parquet: the table's columns and `_change_type`; the client adds `_commit_version` and
 * `_commit_timestamp` from the line's `version` and `timestamp`, as the reference client does).
 */
export const tableChanges: SharingHandler = async ({ buyerId, params, search, headers, origin }) => {
  const table = await tableOf(buyerId, params);
  const capabilities = responseCapabilities(headers);
  const fileIdHash = fileIdHashHeader(headers);
  const versions = await sharedVersions(buyerId, table.tableId);
  const range = changeRange(versions, search);
  const [detail, changeFiles, parts] = await Promise.all([
    detailOf(buyerId, table, range.end.version),
    sharedChangeFiles(buyerId, table.tableId, range.start.version, range.end.version),
    sharedParts(buyerId, table.tableId, [range.end.version]),
  ]);
  const missing = range.versions.find((version) => !changeFiles.some((file) => file.version === version.version));
  if (missing) {
    throw new AppError(
      "service_unavailable",
      `The change file of version ${missing.version} is being made. Ask again in ${formatSeconds(CHANGE_FILE_RETRY_SECONDS)}.`,
      { "Retry-After": String(CHANGE_FILE_RETRY_SECONDS) },
    );
  }
  const lines: unknown[] = [PROTOCOL_LINE, metadataLine(table, detail, parts, false)];
  const now = new Date();
  for (const file of changeFiles) {
    const url = await downloadUrl(
      { id: file.fileId, name: file.name, contentType: RENDITION_CONTENT_TYPES.parquet, storageKey: file.storageKey },
      origin,
      now,
    );
    lines.push({
      cdf: {
        url,
        id: fileId(file.fileId, file.sha256),
        partitionValues: {},
        size: file.size,
        timestamp: file.createdAt.getTime(),
        version: file.version,
        expirationTimestamp: now.getTime() + DOWNLOAD_LINK_TTL_SECONDS * 1000,
      },
    });
  }
  return ndjson(lines, range.start.version, { ...capabilities, ...fileIdHash });
};

/** How long a client waits for a change file still being made (one made before change files existed). */
const CHANGE_FILE_RETRY_SECONDS = 30;
