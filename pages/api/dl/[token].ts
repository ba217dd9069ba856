import type { NextApiRequest, NextApiResponse } from "next";
import { sendDownload } from "@/lib/downloads/node";

// The body is the file: no request body parsing, and no warning for large responses.
export const config = { api: { bodyParser: false, responseLimit: false } };

/**
 * Signed download links (no API key: the token is the authorisation). A Pages Router route,
 * because App Router responses lose their Content-Length (see lib/downloads DOWNLOAD_PATH).
 */
export default async function downloadLink(req: NextApiRequest, res: NextApiResponse) {
  await sendDownload(req, res, String(req.query.token));
}
