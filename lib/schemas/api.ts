import { z } from "zod";
import { NOTICE_DAYS, ORDER_PAGE_SIZE } from "../contract";
import { FILE_FORMATS, PROFILE_STATUSES, RENDITION_FORMATS, RENDITION_STATUSES } from "../data-formats";
import { ORDER_STATUSES } from "./order-status";
import { noticeSchema, qualitySchema } from "./quality";
import { handleRulesText, SOCIAL_PLATFORMS } from "./social-platforms";
import { wholeNumber } from "./whole-number";

/**
 * Every request and response of /api/v1, described once: validation and the OpenAPI document use
 * these. A leaf: it imports nothing that touches the database, so serving the OpenAPI document
 * loads no database client.
 */

/** A `limit` query parameter: a whole number within `range`, its default when not given. */
const limitParameter = (range: { min: number; max: number; default: number }, what: string, example: string) => {
  const rule = `limit must be from ${range.min} to ${range.max}`;
  return wholeNumber("limit", rule)
    .pipe(z.number().min(range.min, rule).max(range.max, rule))
    .optional()
    .default(range.default)
    .meta({ description: `${what}, ${range.min} to ${range.max}; ${range.default} when not given.`, example });
};

export const listOrdersQuerySchema = z
  .object({
    limit: limitParameter(ORDER_PAGE_SIZE, "Page size", String(ORDER_PAGE_SIZE.default)),
    offset: wholeNumber("offset")
      .optional()
      .default(0)
      .meta({ description: "Position of the first order; use the previous page's next_offset.", example: "0" }),
  })
  .meta({ id: "ListOrdersQuery" });

const timestamp = z.iso.datetime().meta({ example: "2026-11-02T09:30:00.000Z" });

export const columnSchema = z
  .object({
    name: z.string().meta({ example: "price" }),
    type: z.string().meta({ description: "The column's type as DuckDB names it.", example: "DOUBLE" }),
    nullable: z.boolean().meta({ description: "Whether any value of the column is null.", example: false }),
  })
  .meta({ id: "Column", description: "A column of a data file." });

const dictionaryText = (description: string, example: string) => z.string().nullable().meta({ description, example });

export const tableColumnSchema = columnSchema
  .extend({
    description: dictionaryText(
      "What the column holds, from the table's data dictionary; null until described.",
      "Price in euros, VAT included.",
    ),
    unit: dictionaryText("The unit of its values, or null.", "EUR"),
    example: dictionaryText("A typical value, as text, or null.", "19.99"),
  })
  .meta({ id: "TableColumn", description: "A column of a table, with its entry in the table's data dictionary." });

export const freshnessSchema = z
  .object({
    every: z.string().meta({ description: "The promised time between versions, ISO 8601.", example: "P1D" }),
    grace: z.string().meta({ description: "How long past it a version may come, ISO 8601.", example: "PT6H" }),
    expected_by: timestamp
      .nullable()
      .meta({ description: "The current version's time plus every plus grace; null before the first version." }),
    late: z.boolean().meta({ description: "Whether expected_by has passed with no new version.", example: false }),
  })
  .meta({ id: "Freshness", description: "How often the table is refreshed, and whether it is late." });

export const renditionSchema = z
  .object({
    format: z.enum(RENDITION_FORMATS).meta({ example: "parquet" }),
    size: z.number().int().nullable().meta({ description: "Bytes; null until ready.", example: 20381 }),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable()
      .meta({
        description: "Hex SHA-256 of the rendition's bytes; null until ready.",
        example: "9b2f6c1d0e8a7b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4",
      }),
    status: z.enum(RENDITION_STATUSES).meta({ example: "ready" }),
  })
  .meta({ id: "Rendition", description: "A file's data in another format, made from the original." });

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
    format: z.enum(FILE_FORMATS).meta({
      description: "What the file holds, from its name (checked when profiled); binary files have no profile.",
      example: "csv",
    }),
    compression: z
      .enum(["gzip"])
      .nullable()
      .meta({ description: "gzip for compressed text (its format is the text's); else null.", example: null }),
    profile_status: z.enum(PROFILE_STATUSES).meta({
      description:
        "pending until the file is profiled (usually within a minute of delivery), ready, failed (see profile_error) or none (binary).",
      example: "ready",
    }),
    rows: z.number().int().nullable().meta({ description: "Rows of data; null until profiled.", example: 1250 }),
    columns: z.array(columnSchema).nullable().meta({ description: "The file's columns; null until profiled." }),
    profile_error: z.string().nullable().meta({
      description: "Why the profile failed, for a person; null otherwise. The file itself stays downloadable.",
      example: null,
    }),
    renditions: z.array(renditionSchema).meta({
      description:
        "The file in other formats (download with ?format=): Parquet is made for every profiled file, CSV and JSON Lines on first request.",
    }),
    table: z
      .object({
        name: z.string().meta({ example: "products" }),
        version: z.number().int().meta({
          description:
            "The table version this file is a part of (a publication's parts are files of the order only once it is a version).",
          example: 3,
        }),
      })
      .nullable()
      .meta({ description: "The table this file is a part of; null for binary files, which belong to no table." }),
  })
  .meta({ id: "File", description: "A file delivered for an order." });

export const TABLE_MODES = ["snapshot", "append"] as const;

const changesSchema = z
  .object({
    inserted: z.number().int().meta({ example: 120 }),
    updated: z.number().int().meta({ description: "Rows changed (pre- and post-image pairs).", example: 35 }),
    deleted: z.number().int().meta({ example: 4 }),
  })
  .meta({ id: "Changes", description: "What a version changed against the previous one." });

export const tableSchema = z
  .object({
    name: z.string().meta({ description: "Stable across versions: ^[a-z][a-z0-9_]{0,62}$.", example: "products" }),
    mode: z.enum(TABLE_MODES).meta({
      description: "snapshot: each version is the whole table; append: each version adds rows.",
      example: "snapshot",
    }),
    key: z
      .array(z.string())
      .nullable()
      .meta({ description: "The columns that identify a record, or null.", example: ["sku"] }),
    version: z
      .number()
      .int()
      .nullable()
      .meta({ description: "The current version; null before the first.", example: 3 }),
    rows: z.number().int().nullable().meta({ description: "Rows as of the current version.", example: 250000 }),
    description: z
      .string()
      .nullable()
      .meta({ description: "What the table holds, from its data dictionary; null until described." }),
    columns: z.array(tableColumnSchema).nullable(),
    updated_at: timestamp.nullable().meta({ description: "When the current version was made." }),
    freshness: freshnessSchema
      .nullable()
      .meta({ description: "The refresh cadence and lateness; null without a cadence." }),
    notices: z.array(noticeSchema).meta({
      description: `The operator's notices about the table (schema changes, delays, deprecations) of the last ${NOTICE_DAYS} days, newest first.`,
    }),
  })
  .meta({ id: "Table", description: "A named dataset of an order, refreshed as versions." });

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
    files: z.array(fileSchema).meta({
      description:
        "The order's files: binary files and the parts of its tables' current versions (an append table's every version); never parts of a publication that is not a version (processing, held, failed or rejected).",
    }),
    tables: z.array(tableSchema),
  })
  .meta({ id: "Order", description: "A paid order of the buyer." });

export const versionSchema = z
  .object({
    version: z.number().int().meta({ example: 3 }),
    mode: z.enum(TABLE_MODES),
    created_at: timestamp,
    rows: z.number().int().meta({ description: "The table's rows as of this version.", example: 250000 }),
    description: z.string().nullable().meta({ description: "The table's description (its current dictionary)." }),
    columns: z
      .array(tableColumnSchema)
      .meta({ description: "Its columns, described by the table's current dictionary." }),
    changes: changesSchema.nullable().meta({ description: "What changed against the previous version." }),
    quality: qualitySchema.meta({
      description:
        "How it was judged before it went out (its report: GET .../versions/{version}/quality). A version made before the checks existed: passed, no checks.",
    }),
    files: z.array(fileSchema).meta({ description: "The parts published as this version." }),
  })
  .meta({ id: "Version", description: "One version of a table." });

export const versionPageSchema = z
  .object({
    data: z.array(versionSchema),
    next_offset: z
      .number()
      .int()
      .nullable()
      .meta({ description: "Offset of the next page; null on the last page.", example: null }),
  })
  .meta({ id: "VersionPage" });

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

export const tablePathSchema = orderPathSchema.extend({
  name: z.string().meta({ description: "Table name, from the order's tables.", example: "products" }),
});

/** The largest version number: versions are stored as PostgreSQL integers. */
export const VERSION_MAX = 2 ** 31 - 1;
const versionRule = `version must be a whole number from 1 to ${VERSION_MAX}`;
const sinceVersionRule = `since_version must be a whole number from 0 to ${VERSION_MAX}`;

/**
 * A version number, 1 to VERSION_MAX; a version "after" which changes are asked, 0 to VERSION_MAX.
 * The bounds of both the API's parameters (as text: versionNumberSchema) and the MCP tools' arguments
 * (lib/mcp/arguments.ts): outside them a 400 invalid_request, never a query that fails.
 */
export const versionValueSchema = z.number().int(versionRule).min(1, versionRule).max(VERSION_MAX, versionRule);
export const sinceVersionValueSchema = z
  .number()
  .int(sinceVersionRule)
  .min(0, sinceVersionRule)
  .max(VERSION_MAX, sinceVersionRule);

/** A version number in a path or a query parameter (anything else is a 400 invalid_request). */
export const versionNumberSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, "version must be a positive whole number")
  .transform(Number)
  .pipe(versionValueSchema)
  .meta({ description: "Version number, from 1.", example: "3" });

export const versionPathSchema = tablePathSchema.extend({ version: versionNumberSchema });

export const listVersionsQuerySchema = z
  .object({
    limit: limitParameter(ORDER_PAGE_SIZE, "Page size", String(ORDER_PAGE_SIZE.default)),
    offset: wholeNumber("offset")
      .optional()
      .default(0)
      .meta({ description: "Position of the first version; use the previous page's next_offset.", example: "0" }),
  })
  .meta({ id: "ListVersionsQuery" });

export const changesQuerySchema = z
  .object({
    format: z
      .enum(RENDITION_FORMATS, { error: `format must be one of ${RENDITION_FORMATS.join(", ")}` })
      .optional()
      .default("parquet")
      .meta({
        description:
          "The change file's format: Parquet (the default), or CSV or JSON Lines, made on first request (202 while it is being made).",
        example: "csv",
      }),
  })
  .meta({ id: "ChangesQuery" });

export const PREVIEW_LIMIT = { min: 1, max: 100, default: 20 } as const;

export const previewQuerySchema = z
  .object({ limit: limitParameter(PREVIEW_LIMIT, "Rows", "5") })
  .meta({ id: "PreviewQuery" });

export const previewSchema = z
  .object({
    columns: z.array(columnSchema),
    rows: z.array(z.array(z.unknown())).meta({
      description:
        "The first rows, each an array of values in column order: JSON values, dates and timestamps in ISO 8601, integers beyond 2^53 as strings, text over 1,000 characters cut (ending in …).",
      example: [[1, "Blue mug", 12.5, "2026-10-01T08:00:00"]],
    }),
    total_rows: z.number().int().meta({ description: "Rows in the whole file.", example: 1250 }),
  })
  .meta({ id: "Preview", description: "The first rows of a data file." });

export const downloadQuerySchema = z
  .object({
    format: z
      .enum(RENDITION_FORMATS, { error: `format must be one of ${RENDITION_FORMATS.join(", ")}` })
      .optional()
      .meta({
        description:
          "The file's data in this format instead of the original (the file's own format gives the original). 202 while it is being made.",
        example: "parquet",
      }),
  })
  .meta({ id: "DownloadQuery" });

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
