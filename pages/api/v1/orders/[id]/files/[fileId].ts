import { noStoreRedirect } from "@/lib/api/responses";
import { apiRoute } from "@/lib/api/route";
import { downloadUrl } from "@/lib/downloads/serve";
import { getDownloadableFile } from "@/lib/orders/queries";
import { publicOrigin } from "@/lib/site";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** 302 to a short-lived signed URL that serves the bytes without the API key. */
export default apiRoute<{ id: string; fileId: string }>(
  { permission: "datasets:read" },
  async ({ request, key, params }) => {
    const file = await getDownloadableFile(key.buyerId, params.id, params.fileId);
    return noStoreRedirect(await downloadUrl(file, publicOrigin(request)));
  },
);
