import { readOnlyApiRoute } from "@/lib/api/node";
import { publicOrigin } from "@/lib/api/validation";
import { withApiKey } from "@/lib/api/with-api-key";
import { downloadUrl } from "@/lib/downloads";
import { getDownloadableFile } from "@/lib/orders/queries";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** 302 to a short-lived signed URL that serves the bytes without the API key. */
export default readOnlyApiRoute(
  withApiKey<{ id: string; fileId: string }>(
    async ({ request, key, params }) => {
      const file = await getDownloadableFile(key.buyerId, params.id, params.fileId);
      // Not Response.redirect(): its headers are immutable and the wrapper adds its own.
      return new Response(null, {
        status: 302,
        headers: { Location: downloadUrl(file.id, publicOrigin(request)), "Cache-Control": "private, no-store" },
      });
    },
    { permission: "datasets:read" },
  ),
);
