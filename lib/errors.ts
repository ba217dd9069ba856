/**
 * The one error type of the app. `code` is stable and machine-readable (the contract's codes for
 * the API; the operator CLI uses the same type with its own codes). Messages are written for the
 * person reading them and never carry secrets, SQL or stack traces.
 */
export type ErrorCode =
  // HTTP API codes (docs/api.md, Errors)
  | "invalid_request"
  | "missing_api_key"
  | "invalid_api_key"
  | "expired_api_key"
  | "revoked_api_key"
  | "insufficient_permission"
  | "social_access_disabled"
  | "order_not_found"
  | "file_not_found"
  | "platform_not_supported"
  | "profile_not_found"
  | "order_not_delivered"
  | "rate_limited"
  | "social_allowance_exhausted"
  | "social_unavailable"
  | "service_unavailable"
  | "preview_not_available"
  | "rendition_pending"
  | "table_not_found"
  | "version_not_found"
  | "quality_report_not_found"
  | "export_not_found"
  // Part 7: rows and SQL
  | "invalid_filter"
  | "unknown_column"
  | "invalid_sql"
  | "query_timeout"
  // Part 8: fair shares
  | "too_many_queries"
  | "answer_too_large"
  /** A query whose client left (logs and metrics only: nobody reads the answer). */
  | "query_cancelled"
  | "subset_too_large"
  // Delta Sharing (lib/sharing): the protocol's own codes are made from these
  | "sharing_not_found"
  | "sharing_malformed_request"
  | "sharing_unsupported"
  // Signed download links and routing
  | "download_link_invalid"
  | "download_link_expired"
  | "range_not_satisfiable"
  | "not_found"
  | "method_not_allowed"
  // Operator codes
  | "buyer_not_found"
  | "key_not_found"
  | "invalid_argument"
  | "source_file_unreadable"
  | "duplicate_file_name"
  | "table_conflict"
  | "publication_not_found"
  | "publication_not_held"
  | "storage_not_configured"
  | "source_object_not_found"
  | "source_object_denied"
  | "storage_unavailable"
  | "upload_interrupted"
  | "export_not_configured";

/** Marks an AppError made by any copy of this module (see AppError's instanceof). */
const APP_ERROR = Symbol.for("dataset-access:AppError");

export class AppError extends Error {
  /**
   * Next.js's server bundle and the launcher (scripts/http-server.ts) each load a copy of lib/, and
   * what one copy makes can reach the other through a value shared per process (lib/singleton.ts:
   * the engine's query pool answers with the errors of the copy that made it): an AppError is one
   * whichever copy made it.
   */
  static [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && APP_ERROR in value;
  }

  readonly [APP_ERROR] = true;

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Response headers that belong to this error, e.g. Retry-After on a 503 or a 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

/**
 * The input an error of these codes is about, which each door names as its buyer typed it: the
 * API's query parameter `q`, MCP's argument `sql`, the Query page's one text box (unnamed), the
 * clients' `--query`. Their messages are written once, without the name (`the query is empty.`),
 * and the door puts its own in front (inputMessage).
 */
const INPUT_OF_CODE: Partial<Record<ErrorCode, "sql">> = { invalid_sql: "sql" };

/**
 * An error's message as a door shows it: the input it is about named as `names` says (`q: the
 * query is empty.`), or, where the door has that input alone (null), the message as a sentence.
 */
export function inputMessage(error: AppError, names: { sql: string | null }): string {
  const input = INPUT_OF_CODE[error.code];
  if (!input) return error.message;
  const name = names[input];
  return name === null ? error.message.charAt(0).toUpperCase() + error.message.slice(1) : `${name}: ${error.message}`;
}
