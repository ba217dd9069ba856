import { readOnlyApiRoute } from "@/lib/api/node";
import { publicOrigin } from "@/lib/api/validation";
import { withApiKey } from "@/lib/api/with-api-key";
import { downloadUrl, noStoreRedirect } from "@/lib/downloads";
import { getDownloadableFile } from "@/lib/orders/queries";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** 302 to a short-lived signed URL that serves the bytes without the API key. */
export default readOnlyApiRoute(
  withApiKey<{ id: string; fileId: string }>(
    async ({ request, key, params }) => {
      const file = await getDownloadableFile(key.buyerId, params.id, params.fileId);
      return noStoreRedirect(downloadUrl(file.id, publicOrigin(request)));
    },
    { permission: "datasets:read" },
  ),
);
