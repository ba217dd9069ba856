import { z } from "zod";
import { sparkSchemaString } from "../datasets/spark-schema";
import { renditionDownloadId } from "../datasets/access";
import { downloadUrl } from "../downloads/serve";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { sharedSchema, sharedSchemas, sharedTable, sharedTables, type SharedTable } from "./catalog";
import { notShared } from "./errors";

/**
 * The Delta Sharing protocol's answers (PROTOCOL.md of delta-io/delta-sharing) over a buyer's
 * orders: one share, `orders`; one schema per delivered order, named by its id; one table per
 * profiled file with a ready Parquet rendition, named by the file's id, each table one Parquet
 * file. Responses are in the protocol's `parquet` format; history (versions, timestamps, change
 * data feed) is not shared. Names are case-insensitive, as the protocol says.
 */

export const SHARE_NAME = "orders";

/** The list endpoints' `maxResults`: 0 to 1,000, 500 when not given (the reference server's). */
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

/** A page token names the list it belongs to and the last key it gave; anything else is refused. */
const pageTokenSchema = z.object({ list: z.string(), order: z.string(), file: z.string() });
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
  if (!token) return { maxResults, after: { list, order: "", file: "" } };
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

/** Reads one more row than asked: its presence is what makes a nextPageToken. */
async function page<Row>(
  search: URLSearchParams,
  list: string,
  read: (after: PagePosition, limit: number) => Promise<Row[]>,
  positionOf: (row: Row) => PagePosition,
): Promise<{ items: Row[]; nextPageToken?: string }> {
  const { maxResults, after } = pageOf(search, list);
  const rows = await read(after, maxResults + 1);
  if (rows.length <= maxResults) return { items: rows };
  const items = rows.slice(0, maxResults);
  return { items, nextPageToken: encodePageToken(items.length ? positionOf(items.at(-1)!) : after) };
}

function shareOf(params: Record<string, string>): string {
  if (params.share?.toLowerCase() !== SHARE_NAME) throw notShared(`Share '${params.share}'`);
  return SHARE_NAME;
}

const shareItem = {
  name: SHARE_NAME,
  displayName: "Orders",
  comment: "Your delivered dataset orders: one schema per order, one table per data file.",
};

export const listShares: SharingHandler = async ({ search }) => {
  const result = await page(
    search,
    "shares",
    async (after, limit) => (after.order < SHARE_NAME ? [shareItem].slice(0, limit) : []),
    () => ({ list: "shares", order: SHARE_NAME, file: "" }),
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
    (schema) => ({ list: "schemas", order: schema.orderId, file: "" }),
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
    (after, limit) => sharedTables(buyerId, orderId, { orderId: after.order, fileId: after.file }, limit),
    (table) => ({ list, order: table.orderId, file: table.fileId }),
  );
  return {
    items: items.map((table) => ({
      name: table.fileId,
      schema: table.orderId,
      share: SHARE_NAME,
      id: table.fileId,
      accessModes: ["url"],
      comment: table.fileName,
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
  const fileId = params.table?.toLowerCase();
  const table = orderId && isTypedId("fil", fileId) ? await sharedTable(buyerId, orderId, fileId) : undefined;
  if (!table) throw notShared(`Table '${SHARE_NAME}.${params.schema}.${params.table}'`);
  return table;
}

function unsupported(message: string): AppError {
  return new AppError("sharing_unsupported", message);
}

const NO_HISTORY =
  "is not supported: this server shares each table's current version only (no history, no change data feed).";

export const tableVersion: SharingHandler = async ({ buyerId, params, search }) => {
  const table = await tableOf(buyerId, params);
  if (search.has("startingTimestamp")) throw unsupported(`startingTimestamp ${NO_HISTORY}`);
  return new Response(null, { headers: { "Delta-Table-Version": String(table.version), "Cache-Control": "no-store" } });
};

export const tableMetadata: SharingHandler = async ({ buyerId, params, search, headers }) => {
  const table = await tableOf(buyerId, params);
  const capabilities = responseCapabilities(headers);
  if (search.has("version") || search.has("timestamp"))
    throw unsupported(`Metadata as of a version or timestamp ${NO_HISTORY}`);
  return ndjson([PROTOCOL_LINE, metadataLine(table)], table.version, capabilities);
};

/** The body of a query: every field optional; fields this server does not know are ignored. */
const queryBodySchema = z
  .object({
    predicateHints: z.array(z.string()).optional(),
    jsonPredicateHints: z.string().optional(),
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
  if (query.startingVersion !== undefined || query.endingVersion !== undefined)
    throw unsupported(`A query with startingVersion ${NO_HISTORY}`);
  if (query.timestamp !== undefined) throw unsupported(`A query as of a timestamp ${NO_HISTORY}`);
  if (query.version !== undefined && query.version !== table.version)
    throw unsupported(`Version ${query.version} ${NO_HISTORY} The current version is ${table.version}.`);

  const lines: unknown[] = [PROTOCOL_LINE, metadataLine(table)];
  // Each table is one file: the only cheap use of limitHint is knowing that no row is wanted.
  if (query.limitHint !== 0) lines.push({ file: await fileLine(table, origin, headers) });
  return ndjson(lines, table.version, { ...capabilities, ...fileIdHashHeader(headers) });
};

export const tableChanges: SharingHandler = async ({ buyerId, params }) => {
  await tableOf(buyerId, params);
  throw unsupported(`Reading the change data feed ${NO_HISTORY}`);
};

const PROTOCOL_LINE = { protocol: { minReaderVersion: 1 } };

function metadataLine(table: SharedTable) {
  return {
    metaData: {
      id: table.fileId,
      name: table.fileId,
      description: table.fileName,
      format: { provider: "parquet" },
      schemaString: sparkSchemaString(table.columns),
      partitionColumns: [],
      configuration: {},
      size: table.size,
      numFiles: 1,
    },
  };
}

async function fileLine(table: SharedTable, origin: string, headers: Headers) {
  fileIdHashHeader(headers); // refuses an unknown scheme before a link is signed
  const now = new Date();
  const url = await downloadUrl(
    {
      id: renditionDownloadId(table.fileId, "parquet"),
      name: `${table.fileId}.parquet`,
      contentType: "application/vnd.apache.parquet",
      storageKey: table.storageKey,
    },
    origin,
    now,
  );
  return {
    url,
    // The rendition's checksum: the same bytes keep the same id, new bytes (a new version) get a new one.
    id: table.sha256,
    partitionValues: {},
    size: table.size,
    stats: JSON.stringify({ numRecords: table.rows }),
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
