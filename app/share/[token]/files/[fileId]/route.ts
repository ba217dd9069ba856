import { publicOrigin } from "@/lib/api/validation";
import { downloadUrl, noStoreRedirect } from "@/lib/downloads";
import { AppError } from "@/lib/errors";
import { getDownloadableFile } from "@/lib/orders/queries";
import { resolveShareToken } from "@/lib/shares";

/** A download through a share link: only files of the shared order, by the same signed URL as the API. */
export async function GET(request: Request, { params }: { params: Promise<{ token: string; fileId: string }> }) {
  const { token, fileId } = await params;
  const shared = await resolveShareToken(token);
  if (!shared) return refusal(404, "This share link does not work: it was revoked, has expired or is incomplete.");
  const origin = publicOrigin(request);
  try {
    const file = await getDownloadableFile(shared.buyerId, shared.orderId, fileId);
    return noStoreRedirect(downloadUrl(file.id, origin), 302);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (error.code === "order_not_delivered")
      return noStoreRedirect(`${origin}/share/${encodeURIComponent(token)}?refused`, 303);
    return refusal(404, "This shared order has no such file.");
  }
}

function refusal(status: number, message: string): Response {
  return new Response(message, {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "private, no-store" },
  });
}
