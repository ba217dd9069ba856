import { storableText } from "../contract";
import { AppError } from "../errors";
import { ANSWER_LIMIT_BYTES, ForbiddenAddressError } from "./network";
import { redactSecrets } from "./secrets";
import { HostKeyMismatchError, SourceChangedError } from "./targets/target";

/** How much of a store's own words a sentence keeps: a store may answer megabytes of error body. */
const QUOTE_LIMIT = 300;
export const FAILURE_MAX_LENGTH = 600;

/**
 * What went wrong with a store, in a sentence for the buyer: the store's status and code where it
 * gave them, a short quote of its words, and what to check. Every secret of the destination is
 * redacted from it (a store's answer may echo what it was sent), control characters are replaced,
 * and it is cut to FAILURE_MAX_LENGTH: it is shown in the dashboard, the API and logs. Redaction
 * comes before any cut (a quote's too): a secret cut first would no longer match, and leak in part.
 */
export function describeFailure(error: unknown, what: string, secrets: Iterable<string>): string {
  const all = [...secrets];
  const redact = (text: string) => redactSecrets(text, all);
  return storableText(redact(sentence(error, what, redact))).slice(0, FAILURE_MAX_LENGTH);
}

function quoteOf(text: unknown, redact: (text: string) => string): string {
  const flat = redact(String(text ?? ""))
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > QUOTE_LIMIT ? `${flat.slice(0, QUOTE_LIMIT)}…` : flat;
}

function sentence(error: unknown, what: string, redact: (text: string) => string): string {
  const quote = (text: unknown) => quoteOf(text, redact);
  if (error instanceof AppError) return error.message;
  if (error instanceof ForbiddenAddressError) {
    return `${what}: the address is refused (${quote(error.message)}); exports only reach public addresses.`;
  }
  if (error instanceof HostKeyMismatchError) return `${what}: ${error.message}.`;
  if (error instanceof SourceChangedError) return `Our copy of a file could not be read as stored: ${error.message}.`;
  const failure = error as {
    name?: string;
    code?: string | number;
    message?: string;
    statusCode?: number;
    $metadata?: { httpStatusCode?: number };
    level?: string;
  };
  const status = failure.$metadata?.httpStatusCode ?? failure.statusCode;
  // An answer without a body (a HEAD's) leaves the SDK only the status: "Unknown"/"UnknownError" say nothing.
  const name = failure.name && !/^(Error|Unknown|UnknownError)$/.test(failure.name) ? failure.name : undefined;
  if (/^(Unknown|UnknownError)$/.test(failure.message ?? "")) failure.message = "";
  // A body the SDK could not parse: garbage, or an answer cut at ANSWER_LIMIT_BYTES (./network.ts).
  const unreadable =
    failure.code === "PARSE_ERROR" ||
    /Deserialization error|while parsing the response body/.test(failure.message ?? "");
  if (unreadable) {
    failure.message = `its answer could not be read (not the store's XML, or over ${ANSWER_LIMIT_BYTES / 1024} KiB)`;
  }
  const code = unreadable ? undefined : typeof failure.code === "string" ? failure.code : name;
  if (
    failure.level === "client-authentication" ||
    /All configured authentication methods failed/.test(failure.message ?? "")
  ) {
    return `${what} refused the user name and key or password.`;
  }
  if (
    status === 401 ||
    status === 403 ||
    /^(InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|AuthenticationFailed|AuthorizationFailure|AuthorizationPermissionMismatch|InvalidAuthenticationInfo)$/.test(
      code ?? "",
    )
  ) {
    const said = [status, code].filter(Boolean).join(" ");
    const words = quote(failure.message);
    return `${what} refused the credentials (${said}${words ? `: ${words}` : ""}). Check the keys and their permissions.`;
  }
  if (/^(NoSuchBucket|ContainerNotFound)$/.test(code ?? "")) {
    return `${what} has no such bucket or container (${code}). Check its name.`;
  }
  if (
    typeof failure.code === "string" &&
    /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|EPIPE)$/.test(failure.code)
  ) {
    return `${what} could not be reached (${failure.code}: ${quote(failure.message)}).`;
  }
  if (typeof failure.code === "number") {
    // An SFTP status: 4 is a failure the server describes (a full disk says so), 3 is permission denied.
    const kind = failure.code === 3 ? "refused the write: permission denied" : "refused the operation";
    return `${what} ${kind} (${quote(failure.message)}).`;
  }
  if (status && status >= 300 && status < 400) {
    return `${what} answered ${status}, a redirect: exports do not follow redirects (check the endpoint or account URL).`;
  }
  if (status) {
    return `${what} answered ${status}${code ? ` ${code}` : ""}: ${quote(failure.message) || "no explanation"}.`;
  }
  return `${what} failed: ${quote(failure.message ?? error) || "no explanation"}.`;
}
