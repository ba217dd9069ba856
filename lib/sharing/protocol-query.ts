import { z } from "zod";
import { renditionDownloadId } from "../datasets/access";
import { RENDITION_CONTENT_TYPES, renditionName } from "../data-formats";
import { downloadUrl } from "../downloads/links";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { AppError } from "../errors";
import { sharedParts, sharedVersions, type SharedPart, type SharedTable, type VersionDetail } from "./catalog";
import { hasPredicateHints, parsePredicate, partMayMatch } from "./predicates";
import { keptVersion, versionRange } from "./history";
import {
  PROTOCOL_LINE,
  asOf,
  detailOf,
  fileId,
  fileIdHashHeader,
  filesOf,
  metadataLine,
  ndjson,
  responseCapabilities,
  tableOf,
  type SharingHandler,
} from "./protocol";

/** The protocol's table query: a version's files (with predicate and limit hints), or its changes from `startingVersion`. */

/** The body of a query: every field optional; fields this server does not know are ignored. */
const queryBodySchema = z
  .object({
    predicateHints: z.unknown().optional(), // of any shape: one that cannot be used is ignored
    jsonPredicateHints: z.unknown().optional(),
    limitHint: z.number().int().min(0).optional(),
    version: z.number().int().min(0).optional(),
    timestamp: z.string().optional(),
    startingVersion: z.number().int().min(0).optional(),
    endingVersion: z.number().int().min(0).optional(),
  })
  .loose();

export const queryTable: SharingHandler = async ({ buyerId, params, headers, body, origin }) => {
  const parsed = queryBodySchema.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AppError(
      "invalid_request",
      `Invalid ${issue?.path.join(".") || "body"}: ${issue?.message ?? "bad value"}.`,
    );
  }
  const query = parsed.data;
  const table = await tableOf(buyerId, params);
  const capabilities = responseCapabilities(headers);
  const fileIdHash = fileIdHashHeader(headers);
  const given = [query.version, query.timestamp, query.startingVersion].filter((value) => value !== undefined);
  if (given.length > 1) {
    throw new AppError("invalid_request", "Give at most one of version, timestamp and startingVersion.");
  }
  if (query.startingVersion !== undefined) {
    return changesSince(buyerId, table, query.startingVersion, query.endingVersion, origin, {
      ...capabilities,
      ...fileIdHash,
    });
  }

  const asked = await asOf(buyerId, table, { version: query.version, timestamp: query.timestamp });
  const version = asked ?? table.currentVersion;
  const versions =
    table.mode === "append" ? await sharedVersions(buyerId, table.tableId) : [{ version, pruned: false }];
  const [detail, parts] = await Promise.all([
    detailOf(buyerId, table, version),
    filesOf(buyerId, table, versions, version),
  ]);
  const lines: unknown[] = [PROTOCOL_LINE, metadataLine(table, detail, parts, asked !== undefined)];
  const now = new Date();
  const stamp = asked === undefined ? {} : { version, timestamp: detail.createdAt.getTime() };
  for (const part of selectParts(parts, detail, query)) {
    lines.push({ file: { ...(await fileAction(part, origin, now)), ...stamp } });
  }
  return ndjson(lines, version, { ...capabilities, ...fileIdHash });
};

/**
 * The parts a snapshot query answers with: those whose statistics may hold a row the
 * `jsonPredicateHints` keep (`predicateHints`, SQL text, are not applied), then, without hints, only
 * as many as hold `limitHint` rows. Both are hints: the client filters and limits the rows again.
 */
function selectParts(
  parts: SharedPart[],
  detail: VersionDetail,
  query: { jsonPredicateHints?: unknown; predicateHints?: unknown; limitHint?: number },
): SharedPart[] {
  const predicate = parsePredicate(query.jsonPredicateHints);
  const kept = predicate
    ? parts.filter((part) => partMayMatch(predicate, { numRecords: part.rows, stats: part.stats }, detail.columns))
    : parts;
  if (query.limitHint === undefined || hasPredicateHints(query)) return kept;
  const limited: SharedPart[] = [];
  let rows = 0;
  for (const part of kept) {
    if (rows >= query.limitHint) break;
    limited.push(part);
    rows += part.rows;
  }
  return limited;
}

/**
 * A query with `startingVersion` (and `endingVersion`): each version's data changes as the
 * protocol's example has them, with `version` and `timestamp`: an `add` per part of the version and,
 * for a snapshot table, a `remove` per part of the version before it (the version replaced it).
 * Delta-Table-Version is the starting version. A snapshot version whose previous version was pruned
 * cannot say what it removed, so a range cannot start there.
 */
async function changesSince(
  buyerId: string,
  table: SharedTable,
  startingVersion: number,
  endingVersion: number | undefined,
  origin: string,
  headers: Record<string, string>,
): Promise<Response> {
  const versions = await sharedVersions(buyerId, table.tableId);
  const range = versionRange(versions, startingVersion, endingVersion);
  const replaces = table.mode === "snapshot" && range.start.version > 1;
  if (replaces) keptVersion(versions, range.start.version - 1);
  const numbers = range.versions.map((version) => version.version);
  const [detail, parts] = await Promise.all([
    detailOf(buyerId, table, range.end.version),
    sharedParts(buyerId, table.tableId, replaces ? [range.start.version - 1, ...numbers] : numbers),
  ]);
  const byVersion = new Map<number, SharedPart[]>();
  for (const part of parts) byVersion.set(part.version, [...(byVersion.get(part.version) ?? []), part]);
  const lines: unknown[] = [PROTOCOL_LINE, metadataLine(table, detail, byVersion.get(range.end.version) ?? [], false)];
  const now = new Date();
  for (const version of range.versions) {
    const stamp = { timestamp: version.createdAt.getTime(), version: version.version };
    for (const part of byVersion.get(version.version) ?? []) {
      lines.push({ add: { ...(await fileAction(part, origin, now)), ...stamp } });
    }
    if (table.mode !== "snapshot" || version.version === 1) continue;
    for (const part of byVersion.get(version.version - 1) ?? []) {
      // A remove action has no statistics.
      const removed: Partial<Awaited<ReturnType<typeof fileAction>>> = await fileAction(part, origin, now);
      delete removed.stats;
      lines.push({ remove: { ...removed, ...stamp } });
    }
  }
  return ndjson(lines, range.start.version, headers);
}
/** A part as a `file`, `add` or `remove` action: its Parquet rendition's link, size and statistics. */
async function fileAction(part: SharedPart, origin: string, now: Date) {
  const url = await downloadUrl(
    {
      id: renditionDownloadId(part.fileId, "parquet"),
      name: renditionName(part.name, "parquet"),
      contentType: RENDITION_CONTENT_TYPES.parquet,
      storageKey: part.storageKey,
    },
    origin,
    now,
  );
  return {
    url,
    id: fileId(part.fileId, part.sha256),
    partitionValues: {},
    size: part.size,
    stats: JSON.stringify({ numRecords: part.rows, ...(part.stats ?? {}) }),
    expirationTimestamp: now.getTime() + DOWNLOAD_LINK_TTL_SECONDS * 1000,
  };
}
