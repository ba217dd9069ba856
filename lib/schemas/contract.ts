import { z } from "zod";

/**
 * The data contract of a table (docs/tables.md, "What a table promises"): the part of the Open Data Contract Standard v3.1.0
 * (ODCS, Bitol) this API writes, described once here for the OpenAPI document and the tests; the
 * tests also hold every document to the official ODCS JSON Schema (tests/fixtures/odcs).
 */

const customProperty = z.object({ property: z.string(), value: z.union([z.string(), z.number(), z.boolean()]) });

export const contractPropertySchema = z
  .object({
    name: z.string().meta({ example: "price_eur" }),
    physicalName: z.string(),
    logicalType: z.enum(["string", "date", "timestamp", "time", "number", "integer", "object", "array", "boolean"]),
    physicalType: z.string().meta({ description: "The column's type as DuckDB names it.", example: "DOUBLE" }),
    description: z.string().optional(),
    primaryKey: z.boolean().optional(),
    primaryKeyPosition: z.number().int().optional(),
    required: z.boolean().meta({ description: "True when the current version has no null in the column." }),
    examples: z.array(z.string()).optional(),
    customProperties: z.array(customProperty).optional().meta({ description: "The column's unit, when described." }),
  })
  .meta({ id: "ContractProperty", description: "A column of the table in its data contract." });

export const contractQualitySchema = z
  .object({
    name: z.string().meta({ example: "row_count_drop" }),
    type: z.literal("custom"),
    engine: z.literal("dataset-access"),
    description: z.string().meta({ example: "Held when rows drop by more than 20%." }),
    dimension: z.enum(["completeness", "consistency", "accuracy"]),
    implementation: z.object({
      check: z.string(),
      threshold: z.number(),
      level: z.enum(["hold", "warn"]),
    }),
  })
  .meta({
    id: "ContractQuality",
    description: "One quality check every version of the table passes before it goes out.",
  });

export const dataContractSchema = z
  .object({
    apiVersion: z.literal("v3.1.0"),
    kind: z.literal("DataContract"),
    id: z
      .string()
      .meta({ description: "Stable for the table: its id.", example: "tbl_5b0c1d2e3f405162738495a6b7c8d9e0" }),
    name: z.string().meta({ example: "products" }),
    version: z.string().meta({ description: "The table's current version as N.0.0.", example: "3.0.0" }),
    status: z.enum(["active", "draft"]).meta({ description: "draft until the table's first version is made." }),
    description: z.object({ purpose: z.string().optional(), usage: z.string() }),
    contractCreatedTs: z.string().optional().meta({ description: "When the current version was made." }),
    servers: z.array(
      z.object({
        server: z.enum(["api", "delta-sharing"]),
        type: z.literal("custom"),
        description: z.string(),
        location: z.string(),
        format: z.string().optional(),
        catalog: z.string().optional(),
        schema: z.string().optional(),
        dataset: z.string().optional(),
      }),
    ),
    schema: z.array(
      z.object({
        name: z.string(),
        physicalName: z.string(),
        physicalType: z.literal("table"),
        logicalType: z.literal("object"),
        description: z.string().optional(),
        properties: z.array(contractPropertySchema),
        quality: z.array(contractQualitySchema),
      }),
    ),
    slaProperties: z
      .array(z.object({ property: z.enum(["frequency", "latency"]), value: z.number(), unit: z.string() }))
      .optional()
      .meta({ description: "The refresh cadence (frequency) and its grace (latency), when the table has one." }),
    support: z
      .array(z.object({ channel: z.string(), tool: z.literal("email"), url: z.string() }))
      .optional()
      .meta({ description: "The seller's address, when one is configured." }),
  })
  .meta({ id: "DataContract", description: "The table's data contract, ODCS v3.1.0." });
export type DataContract = z.infer<typeof dataContractSchema>;
