import { textResponse } from "./text-response";
import { AppError } from "../errors";
import { problemResponse } from "./problem";

/** Generic responses of the API and the download routes. */

/** A JSON string, or whitespace between tokens. */
const JSON_STRING_OR_SPACE = /("(?:[^"\\]+|\\.)*")|\s+/g;

/**
 * `json` without whitespace between its tokens, every string and number as it was. PostgreSQL's
 * json_build_object writes `{"name" : "x", "rows" : 2}`; JSON.stringify writes `{"name":"x","rows":2}`:
 * every body reads like the latter, whichever made it.
 */
export function compactJson(json: string): string {
  return json.replace(JSON_STRING_OR_SPACE, (_, string: string | undefined) => string ?? "");
}

/** JSON for API clients (already serialised, e.g. by the database, and made compact): never cached by shared caches. */
export function apiJson(json: string): Response {
  return textResponse(compactJson(json), {
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "private, no-store" },
  });
}

/** The methods every read-only route serves. */
export const READ_ONLY_METHODS = ["GET", "HEAD"] as const;

export function isReadOnlyMethod(method: string | undefined): boolean {
  return method === "GET" || method === "HEAD";
}

/** 405 with Allow. Built from the method's name alone: a web Request cannot even be made for some (TRACE). */
export function methodNotAllowed(method: string, requestId: string, what = "this API is read-only"): Response {
  const allow = READ_ONLY_METHODS.join(", ");
  return problemResponse(
    new AppError("method_not_allowed", `${printable(method)} is not allowed: ${what}. Allowed: ${allow}.`),
    requestId,
    { Allow: allow },
  );
}

/**
 * Why an API path that Next.js would not route as sent is refused before it: a percent-encoding
 * that does not decode (`%zz`, `%C3%28`, a lone `%`), where Next.js answers its HTML 400 page, or a
 * `.`/`..` segment, raw or encoded (`%2e%2e`), which URL parsing resolves, leaving the API
 * (`/api/v1/%2e%2e/x` is served as `/api/x`). Under /api/dl the link was altered (403), elsewhere
 * in the API a path value is malformed (400). Undefined for any other path.
 */
export function unroutableApiPath(url: string): AppError | undefined {
  const path = url.split("?", 1)[0]!;
  if (!API_PATH.test(path) || !/%|\/\.|\\/.test(path)) return undefined;
  // A backslash counts as a slash: URL parsing reads it so.
  const segments = path.split(/[/\\]/).map(decodedSegment);
  if (!segments.some((segment) => segment === undefined || segment === "." || segment === "..")) return undefined;
  return path.startsWith("/api/dl")
    ? new AppError(
        "download_link_invalid",
        "This download link is not valid: it is malformed or has been altered. Request a new one from the API.",
      )
    : new AppError(
        "invalid_request",
        "The request path is malformed: an invalid percent-encoding or a . or .. segment.",
      );
}

/** The API's paths: /api/v1 and its download links. */
export const API_PATH = /^\/api\/(v1|dl)(\/|\?|$)/;

function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** A redirect no cache keeps (signed links expire). Not Response.redirect(): its headers are immutable. */
export function noStoreRedirect(location: string, status: 302 | 303 = 302): Response {
  return new Response(null, { status, headers: { Location: location, "Cache-Control": "private, no-store" } });
}

/** A plain-text 404 for browser routes (dashboard and share-link downloads), which are not part of the API. */
export function plainNotFound(message: string): Response {
  return new Response(message, {
    status: 404,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "private, no-store" },
  });
}

/** A method name as it may appear in a message: a token of at most 20 characters (RFC 9110), else "This method". */
function printable(method: string): string {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/.test(method) ? method : "This method";
}
