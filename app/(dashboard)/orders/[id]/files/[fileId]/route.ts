import { noStoreRedirect } from "@/lib/http/responses";
import { currentBuyer } from "@/lib/auth/session";
import { browserDownload } from "@/lib/http/browser-download";
import { publicOrigin } from "@/lib/site";

/**
 * A dashboard download: the signed-in buyer's own file (`?format=`: its data in another format),
 * by the same short-lived signed URL the API redirects to.
 */
export async function GET(request: Request, { params }: { params: Promise<{ id: string; fileId: string }> }) {
  const { id, fileId } = await params;
  const orderPage = `/orders/${encodeURIComponent(id)}`;
  const buyer = await currentBuyer();
  if (!buyer) {
    return noStoreRedirect(`${publicOrigin(request)}/signin?${new URLSearchParams({ callbackUrl: orderPage })}`);
  }
  return browserDownload(request, { buyerId: buyer.id, orderId: id, fileId, orderPage });
}
