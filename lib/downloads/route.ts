import type { IncomingMessage, ServerResponse } from "node:http";
import { streamingNodeRoute } from "../api/node";
import { DOWNLOAD_PATH, serveDownload } from "./serve";

const DOWNLOAD_LINK_PATH = new RegExp(`^${DOWNLOAD_PATH}(?:/|$)`);

/** Whether a request path is a signed download link's (`/api/dl/<token>`, or a malformed one under /api/dl). */
export function isDownloadLinkPath(path: string): boolean {
  return DOWNLOAD_LINK_PATH.test(path);
}

/**
 * Serves the signed download links on the app's own HTTP server (scripts/http-server.ts), not
 * through Next.js: piped straight from the file to the socket, a 1 GiB download ran at 0.54x of a
 * bare fs.createReadStream server through Next.js's request handler and at its speed without it
 * (bench/download.ts). Everything under /api/dl is a link: a missing or extra segment is an invalid
 * link (problem+json), as a real token has no "/".
 */
export const serveDownloadLink: (req: IncomingMessage, res: ServerResponse) => Promise<void> = streamingNodeRoute(
  (request, { requestId, incoming }) => serveDownload(request, tokenOf(incoming.url ?? ""), { requestId }),
);

function tokenOf(url: string): string {
  const path = url.split("?", 1)[0]!.slice(DOWNLOAD_PATH.length + 1);
  try {
    return decodeURIComponent(path);
  } catch {
    return path; // not a token either way; refused as an invalid link
  }
}
