import { z } from "zod";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { TABLE_NAME_PATTERN } from "../tables/names";
import { sharedSchema, sharedSchemas, sharedTables, sharedVersions } from "./catalog";
import { notShared } from "./errors";
import { parseTimestamp, versionAtOrAfter, versionNumber } from "./history";
import {
  PROTOCOL_LINE,
  SHARE_NAME,
  asOf,
  detailOf,
  filesOf,
  json,
  metadataLine,
  ndjson,
  responseCapabilities,
  schemaId,
  shareOf,
  tableOf,
  type SharingHandler,
} from "./protocol";

/** The protocol's catalog: the share, its schemas and tables (in pages), a table's version and metadata. */

/** The list endpoints' `maxResults`: 0 to 1,000 (0: no items, no token), 500 when not given (the reference server's). */
export const MAX_RESULTS = { max: 1000, default: 500 } as const;

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
