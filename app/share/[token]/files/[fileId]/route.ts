import { noStoreRedirect } from "@/lib/http/responses";
import { browserDownload } from "@/lib/http/browser-download";
import { countShareDownload, lookUpShareToken } from "@/lib/share-links";
import { publicOrigin } from "@/lib/site";

/**
 * A download through a share link: only files of the shared order (`?format=` as on the dashboard),
 * by the same signed URL as the API. A link that does not work sends the browser to the share
 * page, which says why.
 */
export async function GET(request: Request, { params }: { params: Promise<{ token: string; fileId: string }> }) {
  const { token, fileId } = await params;
  const sharePage = `/share/${encodeURIComponent(token)}`;
  const shared = await lookUpShareToken(token);
  if (!shared?.active) return noStoreRedirect(`${publicOrigin(request)}${sharePage}`, 303);
  return browserDownload(request, { ...shared, fileId, orderPage: sharePage }, () => countShareDownload(shared.linkId));
}
