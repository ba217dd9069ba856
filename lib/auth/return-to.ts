const BASE = "http://return-to.invalid";

/**
 * Where to go after signing in: a path on this site only, else the orders page. Parsed the way a
 * browser would (browsers drop tabs and newlines, and read a backslash as a slash), and kept only if it stays
 * on this origin.
 */
export function safeReturnPath(value: unknown, fallback = "/orders"): string {
  if (typeof value !== "string" || !isLocalPath(value)) return fallback;
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return fallback;
  }
  if (url.origin !== BASE) return fallback;
  // Resolving dot segments can turn a path into a network-path reference (`/..//evil.example` and
  // `/%2e%2e//evil.example` become `//evil.example`), which a browser would leave the site for: the result must
  // itself be a plain local path.
  const path = `${url.pathname}${url.search}${url.hash}`;
  return isLocalPath(path) ? path : fallback;
}

/** A path on this origin as it stands: one leading slash, no second slash or backslash after it, no control characters. */
function isLocalPath(value: string): boolean {
  return /^\/(?![/\\])/.test(value) && !/[\u0000-\u001f\u007f\\]/.test(value);
}
