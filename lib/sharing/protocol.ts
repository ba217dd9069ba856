import { createHash } from "node:crypto";
import { sparkSchemaString } from "../engine/spark-schema";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { TABLE_NAME_PATTERN } from "../tables/names";
import {
  sharedParts,
  sharedTable,
  sharedVersion,
  sharedVersions,
  type SharedPart,
  type SharedTable,
  type VersionDetail,
} from "./catalog";
import { notShared } from "./errors";
import { keptVersion, parseTimestamp, versionAsOf } from "./history";

/**
 * The Delta Sharing protocol's answers (PROTOCOL.md of delta-io/delta-sharing) over a buyer's
 * orders: one share, `orders`; one schema per delivered order, named by its id; one table per
 * table of that order with a version (contract Part 4), named by the table's name. A table's
 * version is its current version; its files are the parts of that version (an append table's: of
 * every kept version up to it), each its Parquet rendition, with per-file statistics. History is
 * shared: queries by `version`, `timestamp` and `startingVersion` (`add` and `remove` lines), the
 * version at a timestamp, and the change data feed (one `cdf` line per version: its change file).
 * Responses are in the protocol's `parquet` format. Names are case-insensitive, as the protocol says.
 *
 * This module holds what the handlers share (requests, answers, parameters, headers); the handlers
 * are in protocol-catalog.ts (lists, version, metadata), protocol-query.ts (queries) and
 * protocol-changes.ts (the change data feed).
 */

export const SHARE_NAME = "orders";

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

export const json = (body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "private, no-store", ...headers },
  });

export const ndjson = (lines: unknown[], version: number, headers: Record<string, string> = {}) =>
  new Response(lines.map((line) => `${JSON.stringify(line)}\n`).join(""), {
    headers: {
      "Content-Type": "application/x-ndjson; charset=utf-8",
      "Cache-Control": "private, no-store",
      "Delta-Table-Version": String(version),
      ...headers,
    },
  });

// ---------------------------------------------------------------------------------------------
// Parameters

export function shareOf(params: Record<string, string>): string {
  if (params.share?.toLowerCase() !== SHARE_NAME) throw notShared(`Share '${params.share}'`);
  return SHARE_NAME;
}

export const schemaId = (name: string | undefined) => {
  const id = name?.toLowerCase();
  return isTypedId("ord", id) ? id : undefined;
};

export async function tableOf(buyerId: string, params: Record<string, string>): Promise<SharedTable> {
  shareOf(params);
  const orderId = schemaId(params.schema);
  const name = params.table?.toLowerCase();
  const table =
    orderId && name && TABLE_NAME_PATTERN.test(name) ? await sharedTable(buyerId, orderId, name) : undefined;
  if (!table) throw notShared(`Table '${SHARE_NAME}.${params.schema}.${params.table}'`);
  return table;
}

/** A version read from the table, with its columns (the table's versions are its own: never missing here). */
export async function detailOf(buyerId: string, table: SharedTable, version: number): Promise<VersionDetail> {
  const detail = await sharedVersion(buyerId, table.tableId, version);
  if (!detail) throw notShared(`Table '${SHARE_NAME}.${table.orderId}.${table.name}'`);
  return detail;
}

/** The data files of `version`: its parts, or for an append table the parts of every kept version up to it. */
export function filesOf(
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

/** `version` or `timestamp` (at most one) of a metadata request or a query, as a kept version; undefined for the current one. */
export async function asOf(
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

// ---------------------------------------------------------------------------------------------
// Answers

export const PROTOCOL_LINE = { protocol: { minReaderVersion: 1 } };

function unsupported(message: string): AppError {
  return new AppError("sharing_unsupported", message);
}

/**
 * The table's metaData as of a version: its `id` is the table's (the same for every version), its
 * schema that version's columns; `version` is said when the request named one.
 */
export function metadataLine(table: SharedTable, detail: VersionDetail, parts: SharedPart[], withVersion: boolean) {
  return {
    metaData: {
      id: table.tableId,
      name: table.name,
      description:
        table.description ??
        `${table.mode === "append" ? "Append" : "Snapshot"} table${table.key.length ? ` keyed by ${table.key.join(", ")}` : ""}, of order ${table.orderName}.`,
      format: { provider: "parquet" },
      schemaString: sparkSchemaString(detail.columns, table.columnComments),
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
export const fileId = (id: string, sha256: string) => createHash("sha256").update(`${id}\n${sha256}`).digest("hex");

// ---------------------------------------------------------------------------------------------
// Headers

/**
 * `delta-sharing-capabilities` (keys and values case-insensitive): this server answers in the
 * `parquet` format, which every client reads. A request that accepts only `delta` is refused, as the
 * protocol requires a server to answer in a sole requested format; the answer names its format.
 */
export function responseCapabilities(headers: Headers): Record<string, string> {
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
export function fileIdHashHeader(headers: Headers): Record<string, string> {
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
