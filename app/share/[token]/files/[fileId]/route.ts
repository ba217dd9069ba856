import { plainNotFound } from "@/lib/api/responses";
import { browserDownload } from "@/lib/downloads/browser";
import { resolveShareToken } from "@/lib/shares";

/** A download through a share link: only files of the shared order, by the same signed URL as the API. */
export async function GET(request: Request, { params }: { params: Promise<{ token: string; fileId: string }> }) {
  const { token, fileId } = await params;
  const shared = await resolveShareToken(token);
  if (!shared) return plainNotFound("This share link does not work: it was revoked, has expired or is incomplete.");
  return browserDownload(request, { ...shared, fileId, orderPage: `/share/${encodeURIComponent(token)}` });
}
