import { AppError, type ErrorCode } from "../errors";
import { unexpectedError } from "../http/unexpected-error";

/**
 * Errors of the Delta Sharing routes in the protocol's shape, `{errorCode, message}` (PROTOCOL.md;
 * the codes are the reference server's and Databricks'), never the problem+json of /api/v1. The
 * app's one error type (AppError) is mapped here, once: the key rules, the rate limit and the
 * database deadlines read the same as in /api/v1, in this protocol's words.
 */

type SharingError = { status: number; errorCode: string };

const SHARING_ERRORS: Partial<Record<ErrorCode, SharingError>> = {
  missing_api_key: { status: 401, errorCode: "UNAUTHENTICATED" },
  invalid_api_key: { status: 401, errorCode: "UNAUTHENTICATED" },
  expired_api_key: { status: 401, errorCode: "UNAUTHENTICATED" },
  revoked_api_key: { status: 401, errorCode: "UNAUTHENTICATED" },
  insufficient_permission: { status: 403, errorCode: "PERMISSION_DENIED" },
  invalid_request: { status: 400, errorCode: "INVALID_PARAMETER_VALUE" },
  sharing_malformed_request: { status: 400, errorCode: "MALFORMED_REQUEST" },
  sharing_unsupported: { status: 400, errorCode: "UNSUPPORTED_OPERATION" },
  sharing_not_found: { status: 404, errorCode: "RESOURCE_DOES_NOT_EXIST" },
  method_not_allowed: { status: 405, errorCode: "MALFORMED_REQUEST" },
  rate_limited: { status: 429, errorCode: "REQUEST_LIMIT_EXCEEDED" },
  service_unavailable: { status: 503, errorCode: "TEMPORARILY_UNAVAILABLE" },
};

/** The protocol's error answer for `error`; anything unexpected is logged and answered without internals. */
export function sharingErrorResponse(
  error: unknown,
  requestId: string,
  headers: Record<string, string> = {},
): Response {
  const responseHeaders = new Headers(headers);
  let status: number;
  let body: { errorCode: string; message: string };
  const known = error instanceof AppError ? SHARING_ERRORS[error.code] : undefined;
  if (error instanceof AppError && known) {
    status = known.status;
    body = { errorCode: known.errorCode, message: error.message };
    for (const [name, value] of Object.entries(error.headers)) responseHeaders.set(name, value);
    if (status === 401) responseHeaders.set("WWW-Authenticate", 'Bearer realm="delta-sharing"');
  } else {
    const unexpected = unexpectedError(error, requestId);
    status = unexpected.status;
    body = {
      errorCode: unexpected.kind === "unavailable" ? "TEMPORARILY_UNAVAILABLE" : "INTERNAL_ERROR",
      message: unexpected.message,
    };
    if (unexpected.retryAfterSeconds !== undefined)
      responseHeaders.set("Retry-After", String(unexpected.retryAfterSeconds));
  }
  responseHeaders.set("Content-Type", "application/json; charset=utf-8");
  responseHeaders.set("Cache-Control", "no-store");
  responseHeaders.set("X-Request-Id", requestId);
  return new Response(JSON.stringify(body), { status, headers: responseHeaders });
}

/** A share, schema or table the key's account does not have: the same answer whether it exists elsewhere or not. */
export function notShared(what: string): AppError {
  return new AppError("sharing_not_found", `${what} does not exist or is not shared with this account.`);
}
