import { publicOrigin } from "@/lib/api/validation";
import { currentBuyer } from "@/lib/auth/session";
import { downloadUrl, noStoreRedirect } from "@/lib/downloads";
import { AppError } from "@/lib/errors";
import { getDownloadableFile } from "@/lib/orders/queries";

/**
 * A dashboard download: the signed-in buyer's own file, by the same short-lived signed URL the
 * API redirects to. A refused download goes back to the order page, which says why.
 */
export async function GET(request: Request, { params }: { params: Promise<{ id: string; fileId: string }> }) {
  const { id, fileId } = await params;
  const origin = publicOrigin(request);
  const buyer = await currentBuyer();
  if (!buyer) {
    const returnTo = `/orders/${encodeURIComponent(id)}`;
    return noStoreRedirect(`${origin}/signin?${new URLSearchParams({ callbackUrl: returnTo })}`);
  }
  try {
    const file = await getDownloadableFile(buyer.id, id, fileId);
    return noStoreRedirect(downloadUrl(file.id, origin));
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (error.code === "order_not_delivered")
      return noStoreRedirect(`${origin}/orders/${encodeURIComponent(id)}?refused`, 303);
    return new Response("Not found: no such order or file in your account.", { status: 404 });
  }
}
