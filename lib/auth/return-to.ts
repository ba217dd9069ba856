const BASE = "http://return-to.invalid";

/**
 * Where to go after signing in: a path on this site only, else the orders page. Parsed the way a
 * browser would (browsers drop tabs and newlines, and read a backslash as a slash), and kept only if it stays
 * on this origin.
 */
export function safeReturnPath(value: unknown, fallback = "/orders"): string {
  if (typeof value !== "string" || !value.startsWith("/") || /[\u0000-\u001f\u007f\\]/.test(value)) return fallback;
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return fallback;
  }
  return url.origin === BASE ? `${url.pathname}${url.search}${url.hash}` : fallback;
}
