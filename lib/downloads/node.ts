import type { IncomingMessage, ServerResponse } from "node:http";
import { serveOnNode } from "../api/node";
import { serveDownload } from "./index";

/**
 * Serves a signed download link on a Node response, streamed, so every header serveDownload
 * sets, Content-Length included, reaches the client unchanged.
 */
export function sendDownload(req: IncomingMessage, res: ServerResponse, token: string): Promise<void> {
  return serveOnNode(req, res, (request) => serveDownload(request, token), { stream: true });
}
