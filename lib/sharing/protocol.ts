import { createHash } from "node:crypto";
import { z } from "zod";
import { sparkSchemaString } from "../engine/spark-schema";
import { renditionDownloadId } from "../datasets/access";
import { RENDITION_CONTENT_TYPES, renditionName } from "../data-formats";
import { downloadUrl } from "../downloads/links";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { TABLE_NAME_PATTERN } from "../tables/names";
import {
  sharedChangeFiles,
  sharedParts,
  sharedSchema,
  sharedSchemas,
  sharedTable,
  sharedTables,
  sharedVersion,
  sharedVersions,
  type SharedPart,
  type SharedTable,
  type VersionDetail,
} from "./catalog";
import { notShared } from "./errors";
import { hasPredicateHints, parsePredicate, partMayMatch } from "./predicates";
import {
  changeRange,
  keptVersion,
  parseTimestamp,
  versionAsOf,
  versionAtOrAfter,
  versionNumber,
  versionRange,
} from "./history";

/**
 * The Delta Sharing protocol's answers (PROTOCOL.md of delta-io/delta-sharing) over a buyer's
 * orders: one share, `orders`; one schema per delivered order, named by its id; one table per
 * table of that order with a version (contract Part 4), named by the table's name. A table's
 * version is its current version; its files are the parts of that version (an append table's: of
 * every kept version up to it), each its Parquet rendition, with per-file statistics. History is
 * shared: queries by `version`, `timestamp` and `startingVersion` (`add` and `remove` lines), the
 * version at a timestamp, and the change data feed (one `cdf` line per version: its change file).
 * Responses are in the protocol's `parquet` format. Names are case-insensitive, as the protocol says.
 */

export const SHARE_NAME = "orders";

/** The list endpoints' `maxResults`: 0 to 1,000 (0: no items, no token), 500 when not given (the reference server's). */
export const MAX_RESULTS = { max: 1000, default: 500 } as const;

export type SharingRequest = {
  buyerId: string;
  params: Record<string, string>;
  search: URLSearchParams;
  headers: Headers;
  body: unknown;
  /** The origin signed download links are made for (local storage). */
  origin: string;
};

export type SharingHandler = (request: SharingRequest) => Promise<Response>;

const json = (body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "private, no-store", ...headers },
  });

const ndjson = (lines: unknown[], version: number, headers: Record<string, string> = {}) =>
  new Response(lines.map((line) => `${JSON.stringify(line)}\n`).join(""), {
    headers: {
      "Content-Type": "application/x-ndjson; charset=utf-8",
      "Cache-Control": "private, no-store",
      "Delta-Table-Version": String(version),
      ...headers,
    },
  });

// ---------------------------------------------------------------------------------------------
// Lists and their pages

/**
 * A page token names the list it belongs to and the last key it gave (ids, or empty before the
 * first); anything else is refused: a token is the client's input, and its positions go into SQL.
 */
const pageTokenSchema = z.object({
  list: z.string().max(100),
  // The share list's position is the share's name.
  order: z.string().refine((value) => value === "" || value === SHARE_NAME || isTypedId("ord", value)),
  table: z.string().refine((value) => value === "" || TABLE_NAME_PATTERN.test(value)),
});
type PagePosition = z.infer<typeof pageTokenSchema>;

const encodePageToken = (position: PagePosition) => Buffer.from(JSON.stringify(position)).toString("base64url");

function pageOf(search: URLSearchParams, list: string): { maxResults: number; after: PagePosition } {
  const rawMax = search.get("maxResults");
  const maxResults = rawMax === null ? MAX_RESULTS.default : Number(rawMax);
  if (!/^\d+$/.test(rawMax ?? "0") || maxResults > MAX_RESULTS.max) {
    throw new AppError(
      "invalid_request",
      `maxResults must be an integer from 0 to ${MAX_RESULTS.max} (default ${MAX_RESULTS.default}).`,
    );
  }
  const token = search.get("pageToken");
  if (!token) return { maxResults, after: { list, order: "", table: "" } };
  let position: PagePosition | undefined;
  try {
    position = pageTokenSchema.parse(JSON.parse(Buffer.from(token, "base64url").toString("utf8")));
  } catch {
    position = undefined;
  }
  if (position?.list !== list) {
    throw new AppError(
      "invalid_request",
      "pageToken is not one this server gave for this list: start again without it.",
    );
  }
  return { maxResults, after: position };
}

/** Reads one more row than asked: its presence makes a nextPageToken (never for 0, which would not move on). */
async function page<Row>(
  search: URLSearchParams,
  list: string,
  read: (after: PagePosition, limit: number) => Promise<Row[]>,
  positionOf: (row: Row) => PagePosition,
): Promise<{ items: Row[]; nextPageToken?: string }> {
  const { maxResults, after } = pageOf(search, list);
  const rows = maxResults === 0 ? [] : await read(after, maxResults + 1);
  if (rows.length <= maxResults) return { items: rows };
  const items = rows.slice(0, maxResults);
  return { items, nextPageToken: encodePageToken(positionOf(items.at(-1)!)) };
}

function shareOf(params: Record<string, string>): string {
  if (params.share?.toLowerCase() !== SHARE_NAME) throw notShared(`Share '${params.share}'`);
  return SHARE_NAME;
}

const shareItem = {
  name: SHARE_NAME,
  displayName: "Orders",
  comment: "Your delivered dataset orders: one schema per order, one table per table of the order.",
};

export const listShares: SharingHandler = async ({ search }) => {
  const result = await page(
    search,
    "shares",
    async (after, limit) => (after.order < SHARE_NAME ? [shareItem].slice(0, limit) : []),
    () => ({ list: "shares", order: SHARE_NAME, table: "" }),
  );
  return json(result);
};

export const getShare: SharingHandler = async ({ params }) => {
  shareOf(params);
  return json({ share: shareItem });
};

export const listSchemas: SharingHandler = async ({ buyerId, params, search }) => {
  const share = shareOf(params);
  const { items, nextPageToken } = await page(
    search,
    `schemas`,
    (after, limit) => sharedSchemas(buyerId, after.order, limit),
    (schema) => ({ list: "schemas", order: schema.orderId, table: "" }),
  );
  // `comment` is not in the protocol's schema object; clients ignore what they do not know.
  return json({
    items: items.map((schema) => ({ name: schema.orderId, share, comment: schema.orderName })),
    nextPageToken,
  });
};

export const listTablesInSchema: SharingHandler = async ({ buyerId, params, search }) => {
  const share = shareOf(params);
  const orderId = schemaId(params.schema);
  if (!orderId || !(await sharedSchema(buyerId, orderId))) throw notShared(`Schema '${share}.${params.schema}'`);
  return json(await tablePage(buyerId, orderId, search, `tables:${orderId}`));
};

export const listAllTables: SharingHandler = async ({ buyerId, params, search }) => {
  shareOf(params);
  return json(await tablePage(buyerId, null, search, "all-tables"));
};

async function tablePage(buyerId: string, orderId: string | null, search: URLSearchParams, list: string) {
  const { items, nextPageToken } = await page(
    search,
    list,
    (after, limit) => sharedTables(buyerId, orderId, { orderId: after.order, name: after.table }, limit),
    (table) => ({ list, order: table.orderId, table: table.name }),
  );
  return {
    items: items.map((table) => ({
      name: table.name,
      schema: table.orderId,
      share: SHARE_NAME,
      id: table.tableId,
      accessModes: ["url"],
    })),
    nextPageToken,
  };
}

// ---------------------------------------------------------------------------------------------
// One table

const schemaId = (name: string | undefined) => {
  const id = name?.toLowerCase();
  return isTypedId("ord", id) ? id : undefined;
};

async function tableOf(buyerId: string, params: Record<string, string>): Promise<SharedTable> {
  shareOf(params);
  const orderId = schemaId(params.schema);
  const name = params.table?.toLowerCase();
  const table =
    orderId && name && TABLE_NAME_PATTERN.test(name) ? await sharedTable(buyerId, orderId, name) : undefined;
  if (!table) throw notShared(`Table '${SHARE_NAME}.${params.schema}.${params.table}'`);
  return table;
}

/** A version read from the table, with its columns (the table's versions are its own: never missing here). */
async function detailOf(buyerId: string, table: SharedTable, version: number): Promise<VersionDetail> {
  const detail = await sharedVersion(buyerId, table.tableId, version);
  if (!detail) throw notShared(`Table '${SHARE_NAME}.${table.orderId}.${table.name}'`);
  return detail;
}

/** The data files of `version`: its parts, or for an append table the parts of every kept version up to it. */
function filesOf(
  buyerId: string,
  table: SharedTable,
  versions: { version: number; pruned: boolean }[],
  version: number,
) {
  const wanted =
    table.mode === "append"
      ? versions.filter((one) => one.version <= version && !one.pruned).map((one) => one.version)
      : [version];
  return sharedParts(buyerId, table.tableId, wanted);
}

export const tableVersion: SharingHandler = async ({ buyerId, params, search }) => {
  const table = await tableOf(buyerId, params);
  let version = table.currentVersion;
  const startingTimestamp = search.get("startingTimestamp");
  if (startingTimestamp !== null) {
    const versions = await sharedVersions(buyerId, table.tableId);
    version = versionAtOrAfter(versions, parseTimestamp("startingTimestamp", startingTimestamp, "up")).version;
  }
  return new Response(null, { headers: { "Delta-Table-Version": String(version), "Cache-Control": "no-store" } });
};

/** `version` or `timestamp` (at most one) of a metadata request or a query, as a kept version; undefined for the current one. */
async function asOf(
  buyerId: string,
  table: SharedTable,
  given: { version?: number; timestamp?: string },
): Promise<number | undefined> {
  if (given.version !== undefined && given.timestamp !== undefined) {
    throw new AppError("invalid_request", "Give one of version and timestamp, not both.");
  }
  if (given.version === undefined && given.timestamp === undefined) return undefined;
  const versions = await sharedVersions(buyerId, table.tableId);
  if (given.version !== undefined) return keptVersion(versions, given.version).version;
  return versionAsOf(versions, parseTimestamp("timestamp", given.timestamp!)).version;
}

export const tableMetadata: SharingHandler = async ({ buyerId, params, search, headers }) => {
  const table = await tableOf(buyerId, params);
  const capabilities = responseCapabilities(headers);
  const rawVersion = search.get("version");
  const asked = await asOf(buyerId, table, {
    version: rawVersion === null ? undefined : versionNumber("version", rawVersion),
    timestamp: search.get("timestamp") ?? undefined,
  });
  const version = asked ?? table.currentVersion;
  const [detail, versions] = await Promise.all([
    detailOf(buyerId, table, version),
    table.mode === "append" ? sharedVersions(buyerId, table.tableId) : [{ version, pruned: false }],
  ]);
  const parts = await filesOf(buyerId, table, versions, version);
  return ndjson([PROTOCOL_LINE, metadataLine(table, detail, parts, asked !== undefined)], version, capabilities);
};

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
      `The change file of version ${missing.version} is being made. Ask again in ${CHANGE_FILE_RETRY_SECONDS} seconds.`,
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

const PROTOCOL_LINE = { protocol: { minReaderVersion: 1 } };

function unsupported(message: string): AppError {
  return new AppError("sharing_unsupported", message);
}

/**
 * The table's metaData as of a version: its `id` is the table's (the same for every version), its
 * schema that version's columns; `version` is said when the request named one.
 */
function metadataLine(table: SharedTable, detail: VersionDetail, parts: SharedPart[], withVersion: boolean) {
  return {
    metaData: {
      id: table.tableId,
      name: table.name,
      description: `${table.mode === "append" ? "Append" : "Snapshot"} table${table.key.length ? ` keyed by ${table.key.join(", ")}` : ""}, of order ${table.orderName}.`,
      format: { provider: "parquet" },
      schemaString: sparkSchemaString(detail.columns),
      partitionColumns: [],
      configuration: { enableChangeDataFeed: "true" },
      ...(withVersion ? { version: detail.version } : {}),
      size: parts.reduce((sum, part) => sum + part.size, 0),
      numFiles: parts.length,
    },
  };
}

/**
 * A file's id: stable for the same bytes of the same part (a cache key), different for another
 * part with the same bytes (a version identical to the previous one adds and removes different files).
 */
const fileId = (id: string, sha256: string) => createHash("sha256").update(`${id}\n${sha256}`).digest("hex");

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

// ---------------------------------------------------------------------------------------------
// Headers

/**
 * `delta-sharing-capabilities` (keys and values case-insensitive): this server answers in the
 * `parquet` format, which every client reads. A request that accepts only `delta` is refused, as the
 * protocol requires a server to answer in a sole requested format; the answer names its format.
 */
function responseCapabilities(headers: Headers): Record<string, string> {
  const formats = capabilityValues(headers.get("delta-sharing-capabilities"), "responseformat");
  if (formats && !formats.includes("parquet")) {
    throw unsupported(
      `responseformat=${formats.join(",")} is not supported: this server answers in the parquet format only (tables here have no Delta reader features). Ask for responseformat=parquet.`,
    );
  }
  return { "Delta-Sharing-Capabilities": "responseformat=parquet" };
}

function capabilityValues(header: string | null, key: string): string[] | undefined {
  for (const capability of (header ?? "").split(";")) {
    const [name, values = ""] = capability.split("=", 2);
    if (name?.trim().toLowerCase() === key) {
      return values
        .split(",")
        .map((value) => value.trim().toLowerCase())
        .filter(Boolean);
    }
  }
  return undefined;
}

/** `fileidhash`: both schemes get the same stable id (the file's sha256); the chosen one is echoed. */
function fileIdHashHeader(headers: Headers): Record<string, string> {
  const scheme = headers.get("fileidhash")?.trim().toLowerCase();
  if (scheme === undefined) return {};
  if (scheme !== "parquet" && scheme !== "delta") {
    throw new AppError(
      "invalid_request",
      `fileidhash must be parquet or delta, not ${JSON.stringify(scheme.slice(0, 40))}.`,
    );
  }
  return { fileidhash: scheme };
}
