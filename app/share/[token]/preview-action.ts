"use server";

import { browserPreview, type PreviewResult } from "@/lib/downloads/browser";
import { lookUpShareToken } from "@/lib/shares";

/**
 * The first rows of a file of a shared order, for the share page's preview: the token is checked
 * again (it may have been revoked since the page was opened) and opens its own order only.
 */
export async function sharedPreviewAction(token: unknown, fileId: unknown): Promise<PreviewResult> {
  const shared = typeof token === "string" ? await lookUpShareToken(token) : undefined;
  if (!shared?.active) return { ok: false, error: "This share link no longer works. Reload the page to see why." };
  if (typeof fileId !== "string") return { ok: false, error: "No such file here." };
  return browserPreview({ buyerId: shared.buyerId, orderId: shared.orderId, fileId });
}
