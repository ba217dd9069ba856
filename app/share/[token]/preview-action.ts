"use server";

import { browserPreview, browserTablePreview, type PreviewResult } from "@/lib/http/browser-download";
import { browserTableRows, tableFilterOf, type RowsResult } from "@/lib/http/browser-explore";
import { lookUpShareToken } from "@/lib/share-links";

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

/** The first rows of a table of a shared order as of its current version, the token checked again. */
export async function sharedTablePreviewAction(token: unknown, table: unknown): Promise<PreviewResult> {
  const shared = typeof token === "string" ? await lookUpShareToken(token) : undefined;
  if (!shared?.active) return { ok: false, error: "This share link no longer works. Reload the page to see why." };
  if (typeof table !== "string") return { ok: false, error: "No such table here." };
  return browserTablePreview({ buyerId: shared.buyerId, orderId: shared.orderId, table });
}

/**
 * A page of a shared order's table through the preview's filter bar: the token checked again and
 * opening its own order only, as for the preview (the share page gets the filter bar, not SQL).
 */
export async function sharedFilterTableAction(token: unknown, table: unknown, filter: unknown): Promise<RowsResult> {
  const shared = typeof token === "string" ? await lookUpShareToken(token) : undefined;
  if (!shared?.active) return { ok: false, error: "This share link no longer works. Reload the page to see why." };
  if (typeof table !== "string") return { ok: false, error: "No such table here." };
  const asked = tableFilterOf(filter);
  if (!asked) return { ok: false, error: "That filter was not valid." };
  return browserTableRows({ buyerId: shared.buyerId, orderId: shared.orderId, table }, asked);
}
