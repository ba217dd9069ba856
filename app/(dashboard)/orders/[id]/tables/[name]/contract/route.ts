import { currentBuyer } from "@/lib/auth/session";
import { browserContract } from "@/lib/http/browser-contract";
import { noStoreRedirect } from "@/lib/http/responses";
import { publicOrigin } from "@/lib/site";

/** A table's data contract (ODCS, YAML or `?format=json`) downloaded by the signed-in buyer. */
export async function GET(request: Request, { params }: { params: Promise<{ id: string; name: string }> }) {
  const { id, name } = await params;
  const buyer = await currentBuyer();
  if (!buyer) {
    const orderPage = `/orders/${encodeURIComponent(id)}`;
    return noStoreRedirect(`${publicOrigin(request)}/signin?${new URLSearchParams({ callbackUrl: orderPage })}`);
  }
  return browserContract(request, { buyerId: buyer.id, orderId: id, table: name });
}
