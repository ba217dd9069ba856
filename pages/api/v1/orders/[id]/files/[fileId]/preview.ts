import { apiJson } from "@/lib/api/responses";
import { apiRoute } from "@/lib/api/route";
import { parseQuery } from "@/lib/api/validation";
import { filePreview } from "@/lib/datasets/access";
import { previewQuerySchema } from "@/lib/schemas/api";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** The first rows of a delivered data file, from its profile. */
export default apiRoute<{ id: string; fileId: string }>(
  { permission: "datasets:read", keyInFirstRead: true },
  async ({ request, key, params, sql }) => {
    const { limit } = parseQuery(previewQuerySchema, request);
    return apiJson(JSON.stringify(await filePreview(key.buyerId, params.id, params.fileId, limit, sql)));
  },
);
