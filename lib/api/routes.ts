import { z } from "zod";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { now } from "../clock";
import { downloadTargetFor, filePreview } from "../datasets/access";
import { downloadUrl } from "../downloads/links";
import { exportRun, exportRunPage } from "../exports/api";
import { orderJson, orderPageJson } from "../orders/queries";
import {
  changesQuerySchema,
  downloadQuerySchema,
  filePathSchema,
  listOrdersQuerySchema,
  listVersionsQuerySchema,
  orderPageSchema,
  orderPathSchema,
  orderSchema,
  previewQuerySchema,
  previewSchema,
  socialPathSchema,
  socialProfileQuerySchema,
  socialProfileSchema,
  tablePathSchema,
  tableSchema,
  versionNumberSchema,
  versionPageSchema,
  versionPathSchema,
  versionSchema,
} from "../schemas/api";
import { rowsQuerySchema, rowsSchema, sqlQuerySchema, sqlSchema, subsetQuerySchema } from "../schemas/explore";
import { readTableRows, rowsPageJson } from "../explore/rows";
import { subsetFile } from "../explore/subsets";
import { runOrderSql, sqlAnswerJson } from "../explore/sql";
import { exportPathSchema, exportRunPageSchema, exportRunSchema, listExportsQuerySchema } from "../schemas/exports";
import { qualityReportSchema } from "../schemas/quality";
import { configuredOrigin, publicOrigin, trustsProxy } from "../site";
import { allowanceHeaders, parsePlatform, readSocialProfile } from "../social/profiles";
import { changeFileTarget, qualityReportJson, tableJson, versionJson, versionPageJson } from "../tables/queries";
import { contractRoute } from "./contract-route";
import { buildOpenApiDocument } from "./openapi";
import type { RouteRequest } from "../http/node";
import { route, type ApiRoute } from "./route-spec";
import type { ApiErrorCode } from "../http/problem";
import { apiJson, noStoreRedirect } from "../http/responses";
import { parseValue } from "./validation";

/**
 * THE table of /api/v1: every route is one entry here, and nothing else routes, documents or lists
 * the API. From it: the production dispatcher and the development catch-all (lib/api/dispatch.ts,
 * pages/api/v1/[[...path]].ts), the OpenAPI document's paths (lib/api/openapi.ts) and the tests'
 * list of paths. A route missing here answers 404 `not_found` in every mode.
 *
 * An entry: its path template (below /api/v1, `{name}` for a path segment), the permission its key
 * needs (or `public`), zod schemas of its path parameters, query and answer (the handler reads its
 * query with `query()`, so what is documented is what is validated), the error codes it may answer
 * besides the key's (401, 403, 429, 503), and its handler. Every route is read-only: GET, and HEAD
 * with the same headers. `keyInFirstRead`: see lib/http/keyed-request.ts (the handler's first database work
 * is a read through `context.sql`).
 */

/** A 302 to a short-lived signed URL for a download target, as a file download answers. */
async function redirectToDownload(request: RouteRequest, target: Parameters<typeof downloadUrl>[0]) {
  return noStoreRedirect(await downloadUrl(target, publicOrigin(request)));
}

const DOWNLOAD_ERRORS: ApiErrorCode[] = ["invalid_request", "order_not_found", "order_not_delivered"];
/** A table's rows, paged or as a subset: checked alike. */
const ROWS_ERRORS: ApiErrorCode[] = [
  ...DOWNLOAD_ERRORS,
  ...(["table_not_found", "version_not_found", "invalid_filter", "unknown_column", "query_timeout"] as const),
  "too_many_queries",
];

export const API_ROUTES: readonly ApiRoute[] = [
  route({
    operationId: "listOrders",
    path: "/orders",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "List paid orders, newest first",
    description: "Needs a `datasets:read` key. Continue with `offset=next_offset` until `next_offset` is null.",
    query: listOrdersQuerySchema,
    answer: { json: orderPageSchema, description: "A page of orders." },
    errors: ["invalid_request"],
    handler: async ({ key, query, sql }) => apiJson(await orderPageJson(key.buyerId, query(), sql)),
  }),
  route({
    operationId: "getOrder",
    path: "/orders/{id}",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Read one order with its files",
    params: orderPathSchema,
    answer: { json: orderSchema, description: "The order." },
    errors: ["order_not_found"],
    handler: async ({ key, params, sql }) => apiJson(await orderJson(key.buyerId, params.id, sql)),
  }),
  route({
    operationId: "downloadFile",
    path: "/orders/{id}/files/{fileId}",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Download a delivered file",
    description:
      `Answers 302 to a signed URL valid for ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes that needs no Authorization header (follow redirects, e.g. \`curl -L\`). ` +
      "The signed URL serves the bytes with Content-Length, ETag (the sha256) and Range support, and refuses " +
      "tampered (403) or expired (410) links and orders no longer delivered (409). " +
      "Where the server stores files in S3-compatible object storage, the redirect goes straight to a presigned URL of " +
      "the store (same lifetime, same Content-Disposition and type; Range and ETag are the store's, and the ETag is " +
      "then the store's, not the sha256). That URL is signed for GET only: HEAD works on the server's own links " +
      "(local storage), not on a presigned URL.",
    params: filePathSchema,
    query: downloadQuerySchema,
    answer: {
      redirect: "Redirect to the signed download URL (Location header).",
      pending:
        "`?format=` asked for a rendition that is being made (code `rendition_pending`): ask again after Retry-After seconds.",
    },
    errors: [...DOWNLOAD_ERRORS, "file_not_found", "preview_not_available"],
    handler: async ({ request, key, params, query, sql }) =>
      redirectToDownload(request, await downloadTargetFor(key.buyerId, params.id, params.fileId, query().format, sql)),
  }),
  route({
    operationId: "previewFile",
    path: "/orders/{id}/files/{fileId}/preview",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Read the first rows of a data file",
    description:
      "The columns and first rows of a CSV, TSV, JSON, JSON Lines or Parquet file (gzip-compressed text too), as profiled " +
      "after delivery, and its row count. Same checks as the download; binary files and files whose profile failed " +
      "or is not done yet answer 404 `preview_not_available`.",
    params: filePathSchema,
    query: previewQuerySchema,
    answer: { json: previewSchema, description: "The first rows." },
    errors: [...DOWNLOAD_ERRORS, "file_not_found", "preview_not_available"],
    handler: async ({ key, params, query, sql }) =>
      apiJson(JSON.stringify(await filePreview(key.buyerId, params.id, params.fileId, query().limit, sql))),
  }),
  route({
    operationId: "getTable",
    path: "/orders/{id}/tables/{name}",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Read a table of an order, with its current version",
    params: tablePathSchema,
    answer: { json: tableSchema, description: "The table." },
    errors: ["order_not_found", "table_not_found"],
    handler: async ({ key, params, sql }) => apiJson(await tableJson(key.buyerId, params.id, params.name, sql)),
  }),
  contractRoute,
  route({
    operationId: "listVersions",
    path: "/orders/{id}/tables/{name}/versions",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "List a table's versions, newest first",
    description: "Pruned versions are not listed. Continue with `offset=next_offset` until `next_offset` is null.",
    params: tablePathSchema,
    query: listVersionsQuerySchema,
    answer: { json: versionPageSchema, description: "A page of versions." },
    errors: ["invalid_request", "order_not_found", "table_not_found"],
    handler: async ({ key, params, query, sql }) =>
      apiJson(await versionPageJson(key.buyerId, params.id, params.name, query(), sql)),
  }),
  route({
    operationId: "getVersion",
    path: "/orders/{id}/tables/{name}/versions/{version}",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Read one version of a table, with its parts",
    params: versionPathSchema,
    answer: { json: versionSchema, description: "The version." },
    errors: ["invalid_request", "order_not_found", "table_not_found", "version_not_found"],
    handler: async ({ key, params, sql }) =>
      apiJson(
        await versionJson(
          key.buyerId,
          params.id,
          params.name,
          parseValue(versionNumberSchema, params.version, "version"),
          sql,
        ),
      ),
  }),
  route({
    operationId: "getVersionQuality",
    path: "/orders/{id}/tables/{name}/versions/{version}/quality",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Read a version's quality report",
    description:
      "The version's publication measured against the table's previous version before it went out: rows, changes, " +
      "added columns, per-column null fraction, distinct count, min, max, mean and PSI, and every check with its " +
      "outcome. A version made before quality reports existed answers 404 `quality_report_not_found`.",
    params: versionPathSchema,
    answer: { json: qualityReportSchema, description: "The quality report." },
    errors: ["invalid_request", "order_not_found", "table_not_found", "version_not_found", "quality_report_not_found"],
    handler: async ({ key, params, sql }) =>
      apiJson(
        await qualityReportJson(
          key.buyerId,
          params.id,
          params.name,
          parseValue(versionNumberSchema, params.version, "version"),
          sql,
        ),
      ),
  }),
  route({
    operationId: "downloadChanges",
    path: "/orders/{id}/tables/{name}/versions/{version}/changes",
    permission: "datasets:read",
    keyInFirstRead: true,
    summary: "Download a version's change file",
    description:
      "What the version changed against the previous one: the table's columns plus `_change_type` (`insert`, `delete`, " +
      "`update_preimage`, `update_postimage`). Answers 302 to a signed URL, with the rules of a file download.",
    params: versionPathSchema,
    query: changesQuerySchema,
    answer: {
      redirect: "Redirect to the signed download URL of the change file (Location header).",
      pending:
        "The change file in the asked format is being made (code `rendition_pending`): ask again after Retry-After seconds.",
    },
    errors: [...DOWNLOAD_ERRORS, "table_not_found", "version_not_found"],
    handler: async ({ request, key, params, query, sql }) => {
      // The path first: a malformed version is a 400 whatever the query says.
      const version = parseValue(versionNumberSchema, params.version, "version");
      const { format } = query();
      return redirectToDownload(
        request,
        await changeFileTarget(key.buyerId, params.id, params.name, version, format, sql),
      );
    },
  }),
  route({
    operationId: "readTableRows",
    path: "/orders/{id}/tables/{name}/rows",
    permission: "datasets:read",
    summary: "Read a table's rows: chosen columns, filtered, sorted, paged",
    description:
      "Runs in the data engine's sandbox over the version's parts (any size). `where` is checked against an allow-list " +
      "on DuckDB's own parse (400 `invalid_filter` names the first offending token). Pages are stable: the order is " +
      "`order_by`, then the key, then (no key, or an append table) the file order. A query past 10 seconds of engine " +
      "time is 422 `query_timeout`.",
    params: tablePathSchema,
    query: rowsQuerySchema,
    answer: { json: rowsSchema, description: "A page of rows." },
    errors: [...ROWS_ERRORS, "rendition_pending", "answer_too_large"],
    handler: async ({ request, key, params, query }) => {
      const { version, columns, where, order_by, limit, offset } = query();
      const page = await readTableRows({
        buyerId: key.buyerId,
        orderId: params.id,
        table: params.name,
        version,
        columns,
        where,
        orderBy: order_by,
        limit,
        offset,
        via: { door: "rows", ...request.lifetime },
      });
      return apiJson(rowsPageJson(page));
    },
  }),
  route({
    operationId: "downloadTableSubset",
    path: "/orders/{id}/tables/{name}/subset",
    permission: "datasets:read",
    summary: "Download a table's matching rows as a file",
    description:
      "Every row of the version that matches `where`, the columns asked, in the rows' order (the key, then where " +
      "needed the file order), as Parquet (default), CSV or JSON Lines. Made by a job: 202 `rendition_pending` with Retry-After while " +
      "it is made, then 302 to a signed URL, with the rules of a file download. The same request within 24 hours " +
      "reuses the file. Checked as rows are; a subset that could not be made answers its error once (then ask again). " +
      "An account has at most 2 subsets being made (a third: 429 `too_many_queries`); its kept subsets are at most " +
      "its quota, the least recently used removed first (one larger alone: 422 `subset_too_large`).",
    params: tablePathSchema,
    query: subsetQuerySchema,
    answer: {
      redirect: "Redirect to the signed download URL of the subset (Location header).",
      pending: "The subset is being made (code `rendition_pending`): ask again after Retry-After seconds.",
    },
    errors: [...ROWS_ERRORS, "too_many_queries", "subset_too_large"],
    handler: async ({ request, key, params, query }) =>
      redirectToDownload(
        request,
        await subsetFile({ buyerId: key.buyerId, orderId: params.id, table: params.name, ...query() }),
      ),
  }),
  route({
    operationId: "runOrderSql",
    path: "/orders/{id}/sql",
    permission: "datasets:read",
    summary: "Run one read-only SELECT over an order's tables",
    description:
      'Views: each table by name (current version), `"name@N"` (version N), `"name@changes"` (every change row with ' +
      "`_change_type` and `_commit_version`). Anything but one SELECT is 400 `invalid_sql`; the query reads only " +
      "this order's files, never writes, attaches or changes a setting; past 10 seconds of engine time, 422 `query_timeout`.",
    params: orderPathSchema,
    query: sqlQuerySchema,
    answer: { json: sqlSchema, description: "The first rows of the result, at most limit." },
    errors: [
      ...DOWNLOAD_ERRORS,
      "version_not_found",
      "invalid_sql",
      "query_timeout",
      "rendition_pending",
      "too_many_queries",
      "answer_too_large",
    ],
    handler: async ({ request, key, params, query }) => {
      const { q, limit } = query();
      const via = { door: "sql", ...request.lifetime } as const;
      return apiJson(
        sqlAnswerJson(await runOrderSql({ buyerId: key.buyerId, orderId: params.id, sql: q, limit, via })),
      );
    },
  }),
  route({
    operationId: "listExports",
    path: "/exports",
    permission: "datasets:read",
    summary: "List export runs to your own storage, newest first",
    description: "Continue with `offset=next_offset` until `next_offset` is null.",
    query: listExportsQuerySchema,
    answer: { json: exportRunPageSchema, description: "A page of export runs." },
    errors: ["invalid_request"],
    handler: async ({ key, query }) => apiJson(JSON.stringify(await exportRunPage(key.buyerId, query()))),
  }),
  route({
    operationId: "getExport",
    path: "/exports/{id}",
    permission: "datasets:read",
    summary: "Read one export run",
    params: exportPathSchema,
    answer: { json: exportRunSchema, description: "The export run." },
    errors: ["export_not_found"],
    handler: async ({ key, params }) => apiJson(JSON.stringify(await exportRun(key.buyerId, params.id))),
  }),
  route({
    operationId: "getSocialProfile",
    path: "/scrape/{platform}/profile",
    permission: "scrape:read",
    summary: "Read a social profile (Social API)",
    description:
      "Needs a `scrape:read` key of an account with Social API access. Every request counts toward the account's " +
      "rate per minute (`RateLimit` headers, policy `social`); each profile returned uses one read of the monthly " +
      "allowance (calendar month, UTC), told by the `Social-Allowance-*` headers.",
    params: socialPathSchema,
    query: socialProfileQuerySchema,
    answer: {
      json: socialProfileSchema,
      description: "The stored profile.",
      headers: {
        "Social-Allowance-Limit": "Profile reads allowed this month.",
        "Social-Allowance-Remaining": "Profile reads left this month.",
        "Social-Allowance-Reset": "When the allowance resets (ISO 8601, start of next month UTC).",
      },
    },
    errors: [
      "invalid_request",
      "social_access_disabled",
      "platform_not_supported",
      "profile_not_found",
      "social_allowance_exhausted",
      "social_unavailable",
    ],
    handler: async ({ request, key, params, query, social }) => {
      // The platform first: an unknown one is a 404 whatever the query says.
      const platform = parsePlatform(params.platform);
      const { handle } = query();
      const { body, allowance } = await readSocialProfile({
        buyerId: key.buyerId,
        allowance: social!.monthlyAllowance,
        platform,
        handle,
        consume: request.method !== "HEAD",
        now: now(),
      });
      const response = apiJson(JSON.stringify(body));
      for (const [name, value] of Object.entries(allowanceHeaders(allowance))) response.headers.set(name, value);
      return response;
    },
  }),
  route({
    operationId: "getOpenApiDocument",
    path: "/openapi.json",
    permission: "public",
    summary: "This API's OpenAPI 3.1 document",
    answer: { json: z.unknown(), description: "The document." },
    errors: [],
    undocumented: true,
    handler: async ({ request }) => {
      // Public: it describes the API, not anybody's data.
      const headers = new Headers({ "Cache-Control": "public, max-age=300" });
      // Its `servers` URL follows the host asked for unless APP_URL fixes it: caches must keep one copy per host.
      if (!configuredOrigin())
        headers.set("Vary", trustsProxy() ? "Host, X-Forwarded-Host, X-Forwarded-Proto" : "Host");
      return Response.json(apiDocument(`${publicOrigin(request)}/api/v1`), { headers });
    },
  }),
];

/** The documented paths, as the OpenAPI document lists them (for tests and clients). */
export const API_PATHS: string[] = API_ROUTES.filter((entry) => !entry.undocumented).map((entry) => entry.path);

/** The OpenAPI document of this table, served at /api/v1/openapi.json and rendered by /docs/api. */
export const apiDocument = (serverUrl: string) => buildOpenApiDocument(serverUrl, API_ROUTES);
