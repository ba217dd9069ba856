import { z } from "zod";
import { ORDER_PAGE_SIZE } from "../contract";
import { wholeNumber } from "./whole-number";

/**
 * The export runs of /api/v1/exports (docs/exports.md), described once: the API's
 * validation, its OpenAPI document and the webhook events' `data` use these. A leaf like
 * ./api.ts: nothing here touches the database.
 */

const limitRule = `limit must be from ${ORDER_PAGE_SIZE.min} to ${ORDER_PAGE_SIZE.max}`;

/** `limit` and `offset` as the order list takes them. */
export const listExportsQuerySchema = z
  .object({
    limit: wholeNumber("limit", limitRule)
      .pipe(z.number().min(ORDER_PAGE_SIZE.min, limitRule).max(ORDER_PAGE_SIZE.max, limitRule))
      .optional()
      .default(ORDER_PAGE_SIZE.default)
      .meta({
        description: `Page size, ${ORDER_PAGE_SIZE.min} to ${ORDER_PAGE_SIZE.max}; ${ORDER_PAGE_SIZE.default} when not given.`,
        example: String(ORDER_PAGE_SIZE.default),
      }),
    offset: wholeNumber("offset")
      .optional()
      .default(0)
      .meta({ description: "Position of the first run; use the previous page's next_offset.", example: "0" }),
  })
  .meta({ id: "ListExportsQuery" });

export const exportPathSchema = z.object({
  id: z.string().meta({ description: "Export run id, as listed.", example: "exr_5b0c1d2e3f405162738495a6b7c8d9e0" }),
});

const timestamp = z.iso.datetime().meta({ example: "2026-11-26T09:30:00.000Z" });

export const EXPORT_TRIGGERS = ["order.delivered", "table.updated", "manual"] as const;
export const EXPORT_RUN_STATES = ["pending", "awaiting_approval", "running", "completed", "failed", "skipped"] as const;

export const exportRunSchema = z
  .object({
    id: z.string().meta({ example: "exr_5b0c1d2e3f405162738495a6b7c8d9e0" }),
    destination: z
      .object({
        id: z.string().meta({ example: "exd_0a1b2c3d4e5f60718293a4b5c6d7e8f9" }),
        type: z.enum(["s3", "azure", "sftp"]).meta({ example: "s3" }),
        name: z.string().meta({ example: "Data lake bucket" }),
      })
      .meta({ description: "Where the run copies to (set up on the dashboard's Exports page)." }),
    trigger: z.enum(EXPORT_TRIGGERS).meta({
      description: "What started it: the order's delivery, a new version of one of its tables, or Export now.",
      example: "order.delivered",
    }),
    order_id: z.string().meta({ example: "ord_9c1b2a3d4e5f60718293a4b5c6d7e8f9" }),
    state: z.enum(EXPORT_RUN_STATES).meta({
      description:
        "pending (waiting for its first attempt, or for a retry after an error), awaiting_approval (a table version whose quality is not passed, to a destination that waits for your approval on the Exports page), running, completed, failed (after retries over more than 24 hours), or skipped (you skipped it instead of approving it).",
      example: "completed",
    }),
    files: z.number().int().meta({
      description: "Files in place so far: copied, or already in the store with the same sha256.",
      example: 3,
    }),
    bytes: z.number().int().meta({ description: "Their size in bytes.", example: 48213 }),
    manifest_key: z.string().nullable().meta({
      description:
        "Where `_manifest.json` (files, sizes, sha256, table versions) was written, last, in the store; null until completed.",
      example: "ord_9c1b2a3d4e5f60718293a4b5c6d7e8f9/_manifest.json",
    }),
    started_at: timestamp.nullable().meta({ description: "When its first attempt began; null while pending." }),
    finished_at: timestamp
      .nullable()
      .meta({ description: "When it completed, failed or was skipped; null until then." }),
    error: z.string().nullable().meta({
      description:
        "What went wrong, in a sentence (the store's answer where it gave one); set while a retry is pending and when failed, null once completed.",
      example: null,
    }),
  })
  .meta({ id: "ExportRun", description: "One copy of an order's files to a destination in the buyer's own storage." });

export const exportRunPageSchema = z
  .object({
    data: z.array(exportRunSchema),
    next_offset: z
      .number()
      .int()
      .nullable()
      .meta({ description: "Offset of the next page; null on the last page.", example: null }),
  })
  .meta({ id: "ExportRunPage" });
