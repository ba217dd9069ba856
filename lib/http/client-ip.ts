import type { IncomingMessage } from "node:http";

/**
 * The client's address: the socket's peer, or, behind a reverse proxy that says so with
 * TRUST_PROXY=true, the last address that proxy appended to X-Forwarded-For (earlier entries
 * are whatever the client sent and cannot be trusted). For the API, Delta Sharing, the sign-in
 * limits and the server's own header (scripts/http-server.ts).
 */
export function clientIp(req: IncomingMessage, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TRUST_PROXY === "true") {
    const forwarded = req.headers["x-forwarded-for"];
    const last = (Array.isArray(forwarded) ? forwarded.join(",") : (forwarded ?? "")).split(",").pop()?.trim();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}
