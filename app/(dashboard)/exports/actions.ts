"use server";

import { z } from "zod";
import { buyerAction } from "@/lib/auth/buyer-action";
import { decideRun } from "@/lib/exports/approval";
import { DESTINATION_TYPES, EXPORT_APPROVALS, EXPORT_FORMATS } from "@/lib/exports/config";
import {
  createDestination,
  deleteDestination,
  setDestinationEnabled,
  testOwnDestination,
  updateDestination,
} from "@/lib/exports/destinations";
import { exportNow } from "@/lib/exports/run-now";
import { sessionActor } from "@/lib/security/client";

/** Export destination mutations of the dashboard (session, validation and CSRF: see buyerAction). */

const EXPORTS_PAGE = () => "/exports";
const destinationId = z.string().min(1, "Unknown destination.");

const destinationInput = z.object({
  name: z.string(),
  type: z.enum(DESTINATION_TYPES, { error: "Choose S3, Azure or SFTP." }),
  fields: z.record(z.string(), z.union([z.string(), z.boolean(), z.number()])),
  orders: z.union([z.literal("all"), z.array(z.string())]),
  format: z.enum(EXPORT_FORMATS),
  template: z.string().optional(),
  approval: z.enum(EXPORT_APPROVALS).optional(),
});

export const createDestinationAction = buyerAction(
  destinationInput,
  async (buyerId, input) => {
    const created = await createDestination(buyerId, input, await sessionActor());
    return { ok: true, id: created.id };
  },
  { revalidate: EXPORTS_PAGE },
);

export const updateDestinationAction = buyerAction(
  destinationInput.extend({ destinationId }),
  async (buyerId, { destinationId: id, ...input }) => {
    await updateDestination(buyerId, id, input, await sessionActor());
    return { ok: true };
  },
  { revalidate: EXPORTS_PAGE },
);

export const setDestinationEnabledAction = buyerAction(
  z.object({ destinationId, enabled: z.boolean() }),
  async (buyerId, { destinationId: id, enabled }) => {
    await setDestinationEnabled(buyerId, id, enabled, await sessionActor());
    return { ok: true };
  },
  { revalidate: EXPORTS_PAGE },
);

export const deleteDestinationAction = buyerAction(
  z.object({ destinationId }),
  async (buyerId, { destinationId: id }) => {
    await deleteDestination(buyerId, id, await sessionActor());
    return { ok: true };
  },
  { revalidate: EXPORTS_PAGE },
);

export const testDestinationAction = buyerAction(
  z.object({ destinationId }),
  async (buyerId, { destinationId: id }) => {
    const result = await testOwnDestination(buyerId, id, await sessionActor());
    return { ok: true, passed: result.ok, message: result.message };
  },
  { revalidate: EXPORTS_PAGE },
);

export const exportNowAction = buyerAction(
  z.object({ destinationId, orderId: z.string().min(1, "Choose an order.") }),
  async (buyerId, { destinationId: id, orderId }) => {
    const runs = await exportNow({ buyerId, orderId, destinationId: id });
    return { ok: true, runId: runs[0]!.id };
  },
  { revalidate: EXPORTS_PAGE },
);

/** Approve or skip a run awaiting approval (a table version with quality warnings): the buyer's own runs only. */
export const decideRunAction = buyerAction(
  z.object({ runId: z.string().min(1, "Unknown export run."), decision: z.enum(["approve", "skip"]) }),
  async (buyerId, { runId, decision }) => {
    const decided = await decideRun(buyerId, runId, decision);
    return { ok: true, state: decided.state };
  },
  { revalidate: EXPORTS_PAGE },
);
