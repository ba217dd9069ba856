/**
 * Headers on every response, API and files included (pages also get a nonce CSP from proxy.ts).
 * Next.js adds them to what it serves (next.config.ts); the app's own server adds them to what it
 * serves past Next.js (scripts/http-server.ts).
 */
export const SECURITY_HEADERS: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "strict-origin-when-cross-origin",
  "X-Frame-Options": "DENY",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** JSON and files: nothing in them may run or be framed, whatever a browser makes of them. */
export const API_HEADERS: Record<string, string> = {
  ...SECURITY_HEADERS,
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
};
