import type { NextApiRequest, NextApiResponse } from "next";
import { serveApiV1 } from "@/lib/api/dispatch";

// No request body is ever read.
export const config = { api: { bodyParser: false } };

/**
 * Development routing of /api/v1 (`npm run dev`; Next.js reloads it on change): every path goes to
 * the route table's dispatcher, which the production server calls directly (scripts/http-server.ts).
 */
export default function api(req: NextApiRequest, res: NextApiResponse): Promise<void> {
  return serveApiV1(req, res);
}
