import { noStoreRedirect, plainNotFound } from "../api/responses";
import { AppError } from "../errors";
import { getDownloadableFile } from "../orders/queries";
import { publicOrigin } from "../site";
import { downloadUrl } from "./serve";

/**
 * A download started in a browser (the dashboard or a share page) for a file the caller may
 * reach: a redirect to the same short-lived signed link as the API; for an order that is not
 * delivered, back to `orderPage` with `?refused`, which says why; anything else a plain 404.
 */
export async function browserDownload(
  request: Request,
  target: { buyerId: string; orderId: string; fileId: string; orderPage: string },
  /** Called once the file is handed out (e.g. to count a share link's downloads). */
  onHandedOut?: () => Promise<void>,
): Promise<Response> {
  const origin = publicOrigin(request);
  try {
    const file = await getDownloadableFile(target.buyerId, target.orderId, target.fileId);
    const location = await downloadUrl(file, origin);
    await onHandedOut?.();
    return noStoreRedirect(location);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (error.code === "order_not_delivered") return noStoreRedirect(`${origin}${target.orderPage}?refused`, 303);
    return plainNotFound("No such order or file here.");
  }
}
