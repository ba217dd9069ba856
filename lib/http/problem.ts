import { AUTH_FAILURE_LIMIT, DATASETS_RATE_LIMIT, DOWNLOAD_LINK_TTL_SECONDS, ORDER_PAGE_SIZE } from "../contract";
import { textResponse } from "./text-response";
import { AppError, inputMessage, type ErrorCode } from "../errors";
import { configuredOrigin } from "../site";
import { unexpectedError } from "./unexpected-error";

type ApiError = { status: number; title: string; /** for the API reference */ meaning: string };

/**
 * Status, title and meaning of every error code the API and its download links answer with
 * (docs/api.md, Errors): the one table that responses, the OpenAPI document and the reference
 * page are made from.
 */
export const API_ERRORS = {
  invalid_request: {
    status: 400,
    title: "Invalid request",
    meaning: `A query or path value is malformed, e.g. limit outside ${ORDER_PAGE_SIZE.min}..${ORDER_PAGE_SIZE.max}, a negative offset or a missing handle.`,
  },
  missing_api_key: {
    status: 401,
    title: "Missing API key",
    meaning: "No `Authorization: Bearer <key>` header, or a malformed one.",
  },
  invalid_api_key: {
    status: 401,
    title: "Invalid API key",
    meaning: "The key is unknown: mistyped, truncated, or never existed.",
  },
  expired_api_key: {
    status: 401,
    title: "Expired API key",
    meaning: "The key is past its expiry. Create a replacement key in the dashboard.",
  },
  revoked_api_key: { status: 401, title: "Revoked API key", meaning: "The key was revoked in the dashboard." },
  insufficient_permission: {
    status: 403,
    title: "Insufficient permission",
    meaning: "The key lacks the permission the endpoint needs (the detail names it).",
  },
  social_access_disabled: {
    status: 403,
    title: "Social API access disabled",
    meaning: "A scrape:read key, but Social API access is not enabled for the account.",
  },
  download_link_invalid: {
    status: 403,
    title: "Invalid download link",
    meaning: "The signed download link was altered. Request a new one from the API.",
  },
  order_not_found: { status: 404, title: "Order not found", meaning: "No such order for this account." },
  file_not_found: { status: 404, title: "File not found", meaning: "No such file in that order." },
  platform_not_supported: {
    status: 404,
    title: "Platform not supported",
    meaning: "The social platform is not one the API supports.",
  },
  profile_not_found: { status: 404, title: "Profile not found", meaning: "No stored profile for that handle." },
  preview_not_available: {
    status: 404,
    title: "Preview not available",
    meaning:
      "The file has no readable data: it is binary, its profile failed, or it is not profiled yet (the detail says which). Download the original instead.",
  },
  table_not_found: {
    status: 404,
    title: "Table not found",
    meaning: "No table of that name in the order (tables are listed in the order's `tables`).",
  },
  version_not_found: {
    status: 404,
    title: "Version not found",
    meaning: "No such version of the table: it was never made, or it was pruned.",
  },
  quality_report_not_found: {
    status: 404,
    title: "Quality report not found",
    meaning:
      "The version was made before quality reports existed, so it has none (its Version's `quality` reads as passed with no checks).",
  },
  export_not_found: {
    status: 404,
    title: "Export not found",
    meaning: "No such export run for this account.",
  },
  invalid_filter: {
    status: 400,
    title: "Invalid filter",
    meaning:
      "The `where` (or `order_by`) is not one boolean expression of the allowed kinds (comparisons, AND/OR/NOT, IS NULL, IN, BETWEEN, LIKE, literals and a few functions: the `where` parameter of the rows endpoint lists them); the detail names the first offending token.",
  },
  unknown_column: {
    status: 400,
    title: "Unknown column",
    meaning: "`columns`, `where` or `order_by` names a column the table's version does not have (the detail names it).",
  },
  invalid_sql: {
    status: 400,
    title: "Invalid SQL",
    meaning:
      "The query is not one read-only SELECT (or WITH ... SELECT) over the order's tables, or DuckDB refused it (the detail says why).",
  },
  query_timeout: {
    status: 422,
    title: "Query timeout",
    meaning:
      "The query needed more than 10 seconds of engine time: narrow it (a filter, fewer columns, a smaller limit).",
  },
  too_many_queries: {
    status: 429,
    title: "Too many queries",
    meaning:
      "The account already has as many queries running and waiting in the data engine as it may (1 running, 4 waiting; 2 subsets being made). Retry after Retry-After seconds; not counted toward the rate limit.",
  },
  answer_too_large: {
    status: 422,
    title: "Answer too large",
    meaning:
      "A single row of the answer is larger than an answer may be (8 MiB; 256 KiB for MCP tools): choose fewer or narrower columns (the detail names the widest).",
  },
  subset_too_large: {
    status: 422,
    title: "Subset too large",
    meaning:
      "The subset alone is larger than the account's subset quota (the detail gives both): narrow it (a filter, fewer columns).",
  },
  not_found: { status: 404, title: "Not found", meaning: "No such API path." },
  method_not_allowed: {
    status: 405,
    title: "Method not allowed",
    meaning: "The API is read-only: GET and HEAD only (see the Allow header).",
  },
  order_not_delivered: {
    status: 409,
    title: "Order not delivered",
    meaning:
      "Files of refunded or unfinished orders cannot be downloaded, nor their tables read (rows, SQL, subsets); the detail names the status.",
  },
  rendition_pending: {
    status: 202,
    title: "Rendition pending",
    meaning: "The file in the asked format is being made. Ask again after Retry-After seconds.",
  },
  download_link_expired: {
    status: 410,
    title: "Download link expired",
    meaning: `The signed download link is older than ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes. Request a new one from the API.`,
  },
  range_not_satisfiable: {
    status: 416,
    title: "Range not satisfiable",
    meaning: "The Range header asks for bytes beyond the end of the file.",
  },
  rate_limited: {
    status: 429,
    title: "Too many requests",
    meaning: `More than ${DATASETS_RATE_LIMIT.limit} requests in ${DATASETS_RATE_LIMIT.windowSeconds} seconds across the account's dataset keys, or over the account's social rate; or more than ${AUTH_FAILURE_LIMIT.limit} failed authentications (401) in ${AUTH_FAILURE_LIMIT.windowSeconds} seconds from the client's address (an IPv6 /64), which is then refused whatever key it sends until the window frees capacity (at most ${AUTH_FAILURE_LIMIT.windowSeconds} seconds; RateLimit policy \`auth-failures\`). Wait Retry-After seconds.`,
  },
  social_allowance_exhausted: {
    status: 429,
    title: "Social allowance exhausted",
    meaning: "The account's social allowance for this month is used up. Wait Retry-After seconds.",
  },
  social_unavailable: {
    status: 503,
    title: "Social source unavailable",
    meaning: "The social source for that platform is unavailable. Retry after Retry-After seconds.",
  },
  service_unavailable: {
    status: 503,
    title: "Service unavailable",
    meaning: "The database or another dependency is down or too slow. Retry after Retry-After seconds.",
  },
} satisfies Partial<Record<ErrorCode, ApiError>>;

export type ApiErrorCode = keyof typeof API_ERRORS;

/** The error codes, for the API reference page. */
export function apiErrorCatalog(): ({ code: ApiErrorCode } & ApiError)[] {
  return (Object.entries(API_ERRORS) as [ApiErrorCode, ApiError][]).map(([code, error]) => ({ code, ...error }));
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** The documentation URL of an error code: `type` in every problem response. */
export function problemType(code: string): string {
  return `${configuredOrigin()}/docs/api#error-${code}`;
}

export type ProblemBody = {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id: string;
};

/**
 * The one way an error becomes an HTTP response: RFC 9457 problem+json. An AppError keeps its
 * code and message; anything else is logged server-side and answered as a bare 503/500 without
 * internals (no stack, no SQL).
 */
export function problemResponse(error: unknown, requestId: string, headers: HeadersInit = {}): Response {
  const { code, status, title, detail, retryAfterSeconds } = describe(error, requestId);
  const body: ProblemBody = { type: problemType(code), title, status, detail, code, request_id: requestId };
  const responseHeaders = new Headers(headers);
  if (error instanceof AppError)
    for (const [name, value] of Object.entries(error.headers)) responseHeaders.set(name, value);
  if (retryAfterSeconds !== undefined) responseHeaders.set("Retry-After", String(retryAfterSeconds));
  responseHeaders.set("Content-Type", PROBLEM_CONTENT_TYPE);
  responseHeaders.set("X-Request-Id", requestId);
  responseHeaders.set("Cache-Control", "no-store");
  return textResponse(JSON.stringify(body), { status, headers: responseHeaders });
}

function describe(
  error: unknown,
  requestId: string,
): { code: string; status: number; title: string; detail: string; retryAfterSeconds?: number } {
  if (error instanceof AppError && error.code === "query_cancelled") {
    // Nginx's "client closed request": the client left, nobody reads this; it keeps the logs and metrics apart from failures.
    return { code: error.code, status: 499, title: "Client closed request", detail: error.message };
  }
  if (error instanceof AppError) {
    const known: ApiError | undefined = (API_ERRORS as Partial<Record<ErrorCode, ApiError>>)[error.code];
    // The API names the SQL by its query parameter, `q` (lib/errors.ts inputMessage).
    const detail = inputMessage(error, { sql: "q" });
    if (known) return { code: error.code, status: known.status, title: known.title, detail };
  }
  const { kind, status, message, retryAfterSeconds } = unexpectedError(error, requestId);
  return kind === "unavailable"
    ? {
        code: "service_unavailable",
        status,
        title: API_ERRORS.service_unavailable.title,
        detail: message,
        retryAfterSeconds,
      }
    : { code: "internal_error", status, title: "Internal error", detail: message };
}
