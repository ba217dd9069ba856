/** Where to go after signing in: a path on this site only (never another origin), else the orders page. */
export function safeReturnPath(value: unknown, fallback = "/orders"): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//") || value.includes("\\")) {
    return fallback;
  }
  return value;
}
