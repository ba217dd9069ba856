import { AUTH_FAILURE_LIMIT, DATASETS_RATE_LIMIT, DOWNLOAD_LINK_TTL_SECONDS, ORDER_PAGE_SIZE } from "../contract";
import { textResponse } from "./text-response";
import { AppError, type ErrorCode } from "../errors";
import { configuredOrigin } from "../site";
import { errorFields, logger } from "../log";

type ApiError = { status: number; title: string; /** for the API reference */ meaning: string };

/**
 * Status, title and meaning of every error code the API and its download links answer with
 * (../shared/CONTRACT.md): the one table that responses, the OpenAPI document and the reference
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
  not_found: { status: 404, title: "Not found", meaning: "No such API path." },
  method_not_allowed: {
    status: 405,
    title: "Method not allowed",
    meaning: "The API is read-only: GET and HEAD only (see the Allow header).",
  },
  order_not_delivered: {
    status: 409,
    title: "Order not delivered",
    meaning: "Files of refunded or unfinished orders cannot be downloaded (the detail names the status).",
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

/** How long a client should wait after the database failed it: a restart or failover takes seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

function describe(
  error: unknown,
  requestId: string,
): { code: string; status: number; title: string; detail: string; retryAfterSeconds?: number } {
  if (error instanceof AppError) {
    const known: ApiError | undefined = (API_ERRORS as Partial<Record<ErrorCode, ApiError>>)[error.code];
    if (known) return { code: error.code, status: known.status, title: known.title, detail: error.message };
  }
  if (isDatabaseUnavailable(error)) {
    const { error: cause } = errorFields(error);
    logger().error({ request_id: requestId, error: cause }, `database unavailable: ${cause.message}`);
    return {
      code: "service_unavailable",
      status: 503,
      title: "Service unavailable",
      detail: `The service cannot reach its database right now. Retry after ${DATABASE_RETRY_AFTER_SECONDS} seconds.`,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    };
  }
  // Our own defect: the stack goes to the log (never to the client) so it can be fixed.
  logger().error({ request_id: requestId, err: error }, "unexpected error");
  return {
    code: "internal_error",
    status: 500,
    title: "Internal error",
    detail: `Something went wrong on our side. Quote request id ${requestId} if you contact support.`,
  };
}

/**
 * Connection-level failures of PostgreSQL and its deadlines (lib/db/timeouts.ts), as driver errors
 * or Prisma's wrapping of them (which keeps the driver's message).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // SQLSTATE classes 08 (connection exception), 57014 (query_canceled: statement_timeout),
  // 57P01-03 (shut down, cannot connect now), 53300 (too many connections).
  const code = (error as { code?: unknown })?.code;
  if (typeof code === "string" && /^(08...|57014|57P0[123]|53300)$/.test(code)) return true;
  const text = `${(error as { code?: string })?.code ?? ""} ${(error as Error)?.message ?? ""}`;
  // node-postgres's own deadlines: "Query read timeout" (no answer), "timeout exceeded when trying
  // to connect" (no free pool connection), "Connection terminated due to connection timeout".
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|P1001|P1002|P1017|Can't reach database|Connection terminated|DatabaseNotReachable|too many clients|the database system is (starting|shutting) up|canceling statement due to statement timeout|Query read timeout|timeout exceeded when trying to connect/i.test(
    text,
  );
}
