"use server";

import { z } from "zod";
import { buyerAction } from "@/lib/auth/buyer-action";
import { sessionActor } from "@/lib/security/client";
import { recordSecurityEvent } from "@/lib/security/log";
import {
  createEndpoint,
  deleteEndpoint,
  endpointEventsSchema,
  endpointUrlSchema,
  resendMessage,
  rotateEndpointSecret,
  sendTestEvent,
  setEndpointEnabled,
} from "@/lib/webhooks/endpoints";

/** Webhook mutations of the dashboard (session, validation and CSRF: see buyerAction). */

const WEBHOOKS_PAGE = () => "/webhooks";
const endpointId = z.string().min(1, "Unknown endpoint.");

export const createEndpointAction = buyerAction(
  z.object({ url: endpointUrlSchema, events: endpointEventsSchema }),
  async (buyerId, { url, events }) => {
    const endpoint = await createEndpoint({ buyerId, url, events });
    await recordSecurityEvent(buyerId, "webhook_created", await sessionActor(), {
      id: endpoint.id,
      detail: `${url} (${events.join(", ")})`,
    });
    return { ok: true, secret: endpoint.secret, url };
  },
  { revalidate: WEBHOOKS_PAGE },
);

export const setEndpointEnabledAction = buyerAction(
  z.object({ endpointId, enabled: z.boolean() }),
  async (buyerId, { endpointId: id, enabled }) => {
    const endpoint = await setEndpointEnabled(buyerId, id, enabled);
    await recordSecurityEvent(buyerId, "webhook_changed", await sessionActor(), {
      id,
      detail: `${endpoint.url} ${enabled ? "enabled" : "disabled"}`,
    });
    return { ok: true };
  },
  { revalidate: WEBHOOKS_PAGE },
);

export const rotateSecretAction = buyerAction(
  z.object({ endpointId }),
  async (buyerId, { endpointId: id }) => {
    const rotated = await rotateEndpointSecret(buyerId, id);
    await recordSecurityEvent(buyerId, "webhook_changed", await sessionActor(), {
      id,
      detail: `${rotated.url}: signing secret rotated`,
    });
    return { ok: true, secret: rotated.secret, url: rotated.url };
  },
  { revalidate: WEBHOOKS_PAGE },
);

export const deleteEndpointAction = buyerAction(
  z.object({ endpointId }),
  async (buyerId, { endpointId: id }) => {
    const endpoint = await deleteEndpoint(buyerId, id);
    await recordSecurityEvent(buyerId, "webhook_deleted", await sessionActor(), { id, detail: endpoint.url });
    return { ok: true };
  },
  { revalidate: WEBHOOKS_PAGE },
);

export const sendTestEventAction = buyerAction(
  z.object({ endpointId }),
  async (buyerId, { endpointId: id }) => {
    await sendTestEvent(buyerId, id);
    return { ok: true };
  },
  { revalidate: WEBHOOKS_PAGE },
);

export const resendMessageAction = buyerAction(
  z.object({ messageId: z.string().min(1, "Unknown message.") }),
  async (buyerId, { messageId }) => {
    await resendMessage(buyerId, messageId);
    return { ok: true };
  },
  { revalidate: WEBHOOKS_PAGE },
);
