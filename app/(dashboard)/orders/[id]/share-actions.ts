"use server";

import { z } from "zod";
import { buyerAction } from "@/lib/auth/buyer-action";
import { isTypedId } from "@/lib/ids";
import { createShareLink, revokeShareLink, shareLinkExpirySchema, shareLinkLabelSchema } from "@/lib/share-links";
import { sessionActor } from "@/lib/security/client";
import { recordSecurityEvent, shareCreatedDetail } from "@/lib/security/log";
import { siteOrigin } from "@/lib/site";

/** Share-link mutations of an order page (session, validation and CSRF: see buyerAction). */

const INVALID = "That request was not valid. Reload the page and try again.";
const orderIdSchema = z.string().refine((id) => isTypedId("ord", id), INVALID);
const orderPage = ({ orderId }: { orderId: string }) => `/orders/${orderId}`;

export const createShareLinkAction = buyerAction(
  z.object({
    orderId: orderIdSchema,
    expiry: z.preprocess((value) => (value === "never" ? value : Number(value)), shareLinkExpirySchema),
    label: shareLinkLabelSchema.optional(),
  }),
  async (buyerId, { orderId, expiry, label }) => {
    const link = await createShareLink({ buyerId, orderId, expiry, label });
    await recordSecurityEvent(buyerId, "share_created", await sessionActor(), {
      id: link.id,
      detail: shareCreatedDetail(link.orderName, label ?? null, link.expiresAt),
    });
    return { ok: true, url: `${await siteOrigin()}/share/${link.token}` };
  },
  { revalidate: orderPage },
);

export const revokeShareLinkAction = buyerAction(
  z.object({ orderId: orderIdSchema, linkId: z.string().refine((id) => isTypedId("shr", id), INVALID) }),
  async (buyerId, { orderId, linkId }) => {
    await revokeShareLink(buyerId, linkId);
    await recordSecurityEvent(buyerId, "share_revoked", await sessionActor(), {
      id: linkId,
      detail: `Share link ${linkId} of order ${orderId}`,
    });
    return { ok: true };
  },
  { revalidate: orderPage },
);
