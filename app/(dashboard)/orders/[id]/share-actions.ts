"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import type { ActionResult } from "@/components/use-action";
import { currentBuyer } from "@/lib/auth/session";
import { AppError } from "@/lib/errors";
import { createShareLink, revokeShareLink, shareLinkExpirySchema } from "@/lib/shares";
import { siteOrigin } from "@/lib/site";

/** Share-link mutations: session checked here, input validated with zod, same-origin only (Next.js actions). */

export type ShareActionResult = ActionResult<{ url?: string }>;

const orderIdSchema = z.string().regex(/^ord_[0-9a-f]{32}$/);
const createSchema = z.object({
  orderId: orderIdSchema,
  expiry: z.preprocess((value) => (value === "never" ? value : Number(value)), shareLinkExpirySchema),
});
const revokeSchema = z.object({ orderId: orderIdSchema, linkId: z.string().regex(/^shr_[0-9a-f]{32}$/) });

export async function createShareLinkAction(input: { orderId: string; expiry: string }): Promise<ShareActionResult> {
  return shareMutation(input, createSchema, async (buyerId, { orderId, expiry }) => {
    const link = await createShareLink({ buyerId, orderId, expiry });
    return { ok: true, url: `${await siteOrigin()}/share/${link.token}` };
  });
}

export async function revokeShareLinkAction(input: { orderId: string; linkId: string }): Promise<ShareActionResult> {
  return shareMutation(input, revokeSchema, async (buyerId, { linkId }) => {
    await revokeShareLink(buyerId, linkId);
    return { ok: true };
  });
}

async function shareMutation<Schema extends z.ZodType<{ orderId: string }>>(
  input: unknown,
  schema: Schema,
  run: (buyerId: string, data: z.infer<Schema>) => Promise<ShareActionResult>,
): Promise<ShareActionResult> {
  const buyer = await currentBuyer();
  if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
  const parsed = schema.safeParse(input);
  if (!parsed.success) return { ok: false, error: "That request was not valid. Reload the page and try again." };
  try {
    const result = await run(buyer.id, parsed.data);
    revalidatePath(`/orders/${parsed.data.orderId}`);
    return result;
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error: error.message };
    throw error;
  }
}
