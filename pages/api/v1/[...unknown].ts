import { serveOnNode } from "@/lib/api/node";
import { problemResponse } from "@/lib/api/problem";
import { requestIdFrom } from "@/lib/api/request-id";
import { AppError } from "@/lib/errors";
import type { NextApiRequest, NextApiResponse } from "next";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** Any other path under /api/v1, whatever the method: a problem+json 404 rather than an HTML page. */
export default function notFound(req: NextApiRequest, res: NextApiResponse) {
  return serveOnNode(req, res, async (request) =>
    problemResponse(
      new AppError("not_found", `There is no ${new URL(request.url).pathname} in the API. See /api/v1/openapi.json.`),
      requestIdFrom(request),
    ),
  );
}
