"use server";

import { currentBuyer } from "@/lib/auth/session";
import { browserPreview, browserTablePreview, type PreviewResult } from "@/lib/http/browser-download";
import { browserTableRows, tableFilterOf, type RowsResult } from "@/lib/http/browser-explore";

/**
 * The first rows of one of the signed-in buyer's files, for the order page's preview. A read, so
 * not a buyerAction: nothing to revalidate. The ids come from the client: the read checks them.
 */
export async function previewFileAction(orderId: unknown, fileId: unknown): Promise<PreviewResult> {
  const buyer = await currentBuyer();
  if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
  if (typeof orderId !== "string" || typeof fileId !== "string") return { ok: false, error: "No such file here." };
  return browserPreview({ buyerId: buyer.id, orderId, fileId });
}

/** The first rows of one of the signed-in buyer's tables as of its current version. */
export async function previewTableAction(orderId: unknown, table: unknown): Promise<PreviewResult> {
  const buyer = await currentBuyer();
  if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
  if (typeof orderId !== "string" || typeof table !== "string") return { ok: false, error: "No such table here." };
  return browserTablePreview({ buyerId: buyer.id, orderId, table });
}

/** A page of one of the signed-in buyer's tables through a preview's filter bar (columns, where, offset). */
export async function filterTableAction(orderId: unknown, table: unknown, filter: unknown): Promise<RowsResult> {
  const buyer = await currentBuyer();
  if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
  if (typeof orderId !== "string" || typeof table !== "string") return { ok: false, error: "No such table here." };
  const asked = tableFilterOf(filter);
  if (!asked) return { ok: false, error: "That filter was not valid." };
  return browserTableRows({ buyerId: buyer.id, orderId, table }, asked);
}
