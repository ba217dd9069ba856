import { z } from "zod";

/**
 * The shapes of contract Part 6 (every version judged before it goes out), described once: the
 * quality report of a publication, its checks, a version's quality and a table's notices. The
 * report is made in lib/tables (quality), stored as JSON with the publication, and answered by the
 * API as stored.
 */

export const CHECK_NAMES = [
  "row_count_zero",
  "row_count_drop",
  "deleted_fraction",
  "null_fraction_increase",
  "distinct_drop",
  "distribution_shift",
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

export const CHECK_LEVELS = ["hold", "warn"] as const;
export type CheckLevel = (typeof CHECK_LEVELS)[number];

/** A check's setting for one table: its threshold (0..1) and level; `off` skips it. */
export type CheckSetting = { threshold: number; level: CheckLevel | "off" };

/** The contract's defaults. `row_count_zero` holds at 0 rows: its threshold is the row count it allows at most. */
export const CHECK_DEFAULTS: Record<CheckName, CheckSetting> = {
  row_count_zero: { threshold: 0, level: "hold" },
  row_count_drop: { threshold: 0.2, level: "hold" },
  deleted_fraction: { threshold: 0.1, level: "hold" },
  null_fraction_increase: { threshold: 0.2, level: "hold" },
  distinct_drop: { threshold: 0.5, level: "warn" },
  distribution_shift: { threshold: 0.25, level: "warn" },
};

export const checkSchema = z
  .object({
    name: z.enum(CHECK_NAMES),
    column: z.string().nullable().meta({ description: "The column it measured; null for a table-wide check." }),
    value: z.number().meta({
      description:
        "What was measured: rows (`row_count_zero`), 1 - rows / previous rows (`row_count_drop`), deleted / previous rows " +
        "(`deleted_fraction`), the rise of a column's null fraction (`null_fraction_increase`), 1 - distinct / previous " +
        "distinct (`distinct_drop`) or the column's PSI against the previous version (`distribution_shift`).",
    }),
    threshold: z.number().meta({ description: "The table's threshold for this check." }),
    level: z.enum(CHECK_LEVELS),
    outcome: z.enum(["passed", "warned", "held"]),
  })
  .meta({ id: "Check", description: "One quality check of a publication against the table's current version." });
export type Check = z.infer<typeof checkSchema>;

export const QUALITY_STATUSES = ["passed", "warned", "released"] as const;
export type QualityStatus = (typeof QUALITY_STATUSES)[number];

export const qualitySchema = z
  .object({
    status: z.enum(QUALITY_STATUSES).meta({
      description:
        "passed: every check passed; warned: a warn-level check did not; released: held, then released by the operator.",
    }),
    reason: z.string().nullable().meta({ description: "The operator's reason when released." }),
    checks: z.array(checkSchema).meta({ description: "The checks that did not pass (every check is in the report)." }),
  })
  .meta({ id: "Quality", description: "How this version was judged before it went out." });
export type Quality = z.infer<typeof qualitySchema>;

/** A version made before the checks existed is answered as passed, with no checks. */
export const QUALITY_BEFORE_CHECKS: Quality = { status: "passed", reason: null, checks: [] };

const nullableNumber = z.number().nullable();
const statValue = z.union([z.string(), z.number(), z.boolean()]).nullable();

export const columnQualitySchema = z
  .object({
    name: z.string(),
    type: z.string(),
    null_fraction: z.number(),
    previous_null_fraction: nullableNumber,
    distinct: z.number().int().meta({ description: "Approximate distinct values." }),
    previous_distinct: z.number().int().nullable(),
    min: statValue.meta({ description: "As in previews: dates ISO 8601, big integers and decimals as strings." }),
    max: statValue,
    mean: nullableNumber.meta({ description: "Numbers only." }),
    psi: nullableNumber.meta({ description: "Population stability index against the current version." }),
  })
  .meta({ id: "ColumnQuality" });
export type ColumnQuality = z.infer<typeof columnQualitySchema>;

export const qualityReportSchema = z
  .object({
    rows: z.number().int(),
    previous_rows: z.number().int().nullable(),
    changes: z.object({ inserted: z.number().int(), updated: z.number().int(), deleted: z.number().int() }),
    added_columns: z.array(z.string()),
    columns: z.array(columnQualitySchema),
    checks: z.array(checkSchema),
  })
  .meta({ id: "QualityReport", description: "A publication measured against the table's current version." });
export type QualityReport = z.infer<typeof qualityReportSchema>;

export const NOTICE_TYPES = ["schema_change", "delay", "deprecation"] as const;
export type NoticeType = (typeof NOTICE_TYPES)[number];

export const noticeSchema = z
  .object({
    id: z.string(),
    type: z.enum(NOTICE_TYPES),
    message: z.string(),
    effective_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: "Notice", description: "An operator's notice about a table (the last 90 days are listed)." });
export type Notice = z.infer<typeof noticeSchema>;
