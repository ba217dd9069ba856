import type { z } from "zod";
import type { Prisma } from "../db/client";
import type { exportRunSchema } from "../schemas/exports";

/** An export run as the API, the webhook events and the dashboard show it (lib/schemas/exports.ts). */
export type ExportRunView = z.infer<typeof exportRunSchema>;

export const RUN_VIEW_SELECT = {
  id: true,
  trigger: true,
  orderId: true,
  state: true,
  files: true,
  bytes: true,
  manifestKey: true,
  startedAt: true,
  finishedAt: true,
  error: true,
  destination: { select: { id: true, type: true, name: true } },
} satisfies Prisma.ExportRunSelect;

export type ExportRunRow = Prisma.ExportRunGetPayload<{ select: typeof RUN_VIEW_SELECT }>;

const TRIGGER_NAMES = { order_delivered: "order.delivered", table_updated: "table.updated", manual: "manual" } as const;

export function exportRunView(row: ExportRunRow): ExportRunView {
  return {
    id: row.id,
    destination: { id: row.destination.id, type: row.destination.type, name: row.destination.name },
    trigger: TRIGGER_NAMES[row.trigger],
    order_id: row.orderId,
    state: row.state,
    files: row.files,
    bytes: Number(row.bytes),
    manifest_key: row.manifestKey,
    started_at: row.startedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
    error: row.error,
  };
}
