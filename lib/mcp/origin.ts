/**
 * Which browser origins may call /api/mcp (DNS rebinding protection, MCP transports spec): a
 * request without Origin is not a browser page's and passes; one with an Origin passes only when it
 * is this site's. With APP_URL set that is APP_URL's origin; without it (a development machine) it
 * is any loopback origin, never one taken from the request's own Host header, which a rebinding
 * page controls.
 */
export function originAllowed(origin: string | null, appUrl: string): boolean {
  if (origin === null) return true;
  let given: URL;
  try {
    given = new URL(origin);
  } catch {
    return false;
  }
  if (appUrl) {
    try {
      return given.origin === new URL(appUrl).origin;
    } catch {
      return false;
    }
  }
  return (given.protocol === "http:" || given.protocol === "https:") && LOOPBACK_HOSTS.has(given.hostname);
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);
