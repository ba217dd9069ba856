import { noStoreRedirect } from "@/lib/api/responses";
import { apiRoute } from "@/lib/api/route";
import { parseQuery } from "@/lib/api/validation";
import { downloadTargetFor } from "@/lib/datasets/access";
import { downloadUrl } from "@/lib/downloads/serve";
import { downloadQuerySchema } from "@/lib/schemas/api";
import { publicOrigin } from "@/lib/site";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** 302 to a short-lived signed URL that serves the bytes (of the original or of `?format=`) without the API key. */
export default apiRoute<{ id: string; fileId: string }>(
  { permission: "datasets:read", keyInFirstRead: true },
  async ({ request, key, params, sql }) => {
    const { format } = parseQuery(downloadQuerySchema, request);
    const target = await downloadTargetFor(key.buyerId, params.id, params.fileId, format, sql);
    return noStoreRedirect(await downloadUrl(target, publicOrigin(request)));
  },
);
