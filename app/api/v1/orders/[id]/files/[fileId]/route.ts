import { publicOrigin } from "@/lib/api/validation";
import { methodNotAllowed, withApiKey } from "@/lib/api/with-api-key";
import { downloadUrl } from "@/lib/downloads";
import { getDownloadableFile } from "@/lib/orders/queries";

export const dynamic = "force-dynamic";

/** 302 to a short-lived signed URL that serves the bytes without the API key. */
export const GET = withApiKey<{ id: string; fileId: string }>(
  async ({ request, key, params }) => {
    const file = await getDownloadableFile(key.buyerId, params.id, params.fileId);
    // Not Response.redirect(): its headers are immutable and the wrapper adds its own.
    return new Response(null, {
      status: 302,
      headers: { Location: downloadUrl(file.id, publicOrigin(request)), "Cache-Control": "private, no-store" },
    });
  },
  { permission: "datasets:read" },
);
export const HEAD = GET;
export { methodNotAllowed as POST, methodNotAllowed as PUT, methodNotAllowed as PATCH, methodNotAllowed as DELETE };
