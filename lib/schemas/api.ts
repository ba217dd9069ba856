import { z } from "zod";
import { ORDER_PAGE_SIZE } from "../contract";
import { ORDER_STATUSES } from "../orders/status";
import { handleRulesText, SOCIAL_PLATFORMS } from "../social/platforms";

/**
 * Every request and response of /api/v1, described once: validation and the OpenAPI document use
 * these. A leaf: it imports nothing that touches the database, so serving the OpenAPI document
 * loads no database client.
 */

const wholeNumber = (name: string) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `${name} must be a whole number`)
    .transform(Number);

const PAGE_SIZE_RULE = `limit must be from ${ORDER_PAGE_SIZE.min} to ${ORDER_PAGE_SIZE.max}`;

export const listOrdersQuerySchema = z
  .object({
    limit: wholeNumber("limit")
      .pipe(z.number().min(ORDER_PAGE_SIZE.min, PAGE_SIZE_RULE).max(ORDER_PAGE_SIZE.max, PAGE_SIZE_RULE))
      .optional()
      .default(ORDER_PAGE_SIZE.default)
      .meta({
        description: `Page size, ${ORDER_PAGE_SIZE.min} to ${ORDER_PAGE_SIZE.max}; ${ORDER_PAGE_SIZE.default} when not given.`,
        example: String(ORDER_PAGE_SIZE.default),
      }),
    offset: wholeNumber("offset")
      .optional()
      .default(0)
      .meta({ description: "Position of the first order; use the previous page's next_offset.", example: "0" }),
  })
  .meta({ id: "ListOrdersQuery" });

const timestamp = z.iso.datetime().meta({ example: "2026-11-02T09:30:00.000Z" });

export const fileSchema = z
  .object({
    id: z.string().meta({ example: "fil_3f1c2a9b8e7d4c6a5b4e3d2c1b0a9f8e" }),
    name: z.string().meta({ example: "products.csv" }),
    size: z.number().int().meta({ description: "Bytes.", example: 48213 }),
    content_type: z.string().meta({ example: "text/csv" }),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .meta({
        description: "Hex SHA-256 of the content; also the download's ETag.",
        example: "5d41e5b1c9a7a1c1f0b7e2a4d3c6f8e9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5",
      }),
    created_at: timestamp,
  })
  .meta({ id: "File", description: "A file delivered for an order." });

export const orderSchema = z
  .object({
    id: z.string().meta({ example: "ord_9c1b2a3d4e5f60718293a4b5c6d7e8f9" }),
    status: z
      .enum(ORDER_STATUSES)
      .meta({ description: "Files can be downloaded only while delivered.", example: "delivered" }),
    name: z.string().meta({ example: "E-commerce product prices, Q3 2026" }),
    paid_at: timestamp,
    delivered_at: timestamp.nullable(),
    downloadable: z.boolean().meta({ description: "True only when status is delivered." }),
    files: z.array(fileSchema),
  })
  .meta({ id: "Order", description: "A paid order of the buyer." });

export const orderPageSchema = z
  .object({
    data: z.array(orderSchema),
    next_offset: z
      .number()
      .int()
      .nullable()
      .meta({ description: "Offset of the next page; null on the last page.", example: 2 }),
  })
  .meta({ id: "OrderPage" });

export const problemSchema = z
  .object({
    type: z.string().meta({ description: "URL of this error code's documentation." }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().meta({ description: "What went wrong and what to do, for a person." }),
    code: z.string().meta({ description: "Stable, machine-readable error code.", example: "order_not_found" }),
    request_id: z.string().meta({ description: "Also in the X-Request-Id header; quote it to support." }),
  })
  .meta({ id: "Problem", description: "An RFC 9457 problem (application/problem+json)." });

export const orderPathSchema = z.object({ id: z.string().meta({ description: "Order id, as listed." }) });
export const filePathSchema = orderPathSchema.extend({
  fileId: z.string().meta({ description: "File id, from the order's files." }),
});

export const socialPathSchema = z.object({
  platform: z.enum(SOCIAL_PLATFORMS).meta({ description: "The social platform." }),
});

export const socialProfileQuerySchema = z
  .object({
    handle: z
      .string({ error: "handle is required" })
      .min(1, "handle is required")
      .meta({
        description: `The profile's handle. A leading @ is dropped and case is ignored; each platform has its own rules (${handleRulesText()}).`,
        example: "@nasa",
      }),
  })
  .meta({ id: "SocialProfileQuery" });

export const socialProfileSchema = z
  .object({
    platform: z.enum(SOCIAL_PLATFORMS),
    handle: z.string().meta({ description: "Normalised: no leading @, lower case.", example: "nasa" }),
    profile: z
      .record(z.string(), z.unknown())
      .meta({ description: "The profile's fields as collected (e.g. name, followers, bio)." }),
    fetched_at: timestamp.meta({ description: "When the profile was collected from the platform." }),
  })
  .meta({ id: "SocialProfile", description: "A social profile, as stored." });
