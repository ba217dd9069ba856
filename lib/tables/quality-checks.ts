import {
  CHECK_DEFAULTS,
  CHECK_NAMES,
  type Check,
  type CheckName,
  type CheckSetting,
  type ColumnQuality,
  type Quality,
  type QualityReport,
} from "../schemas/quality";
import { AppError } from "../errors";

/**
 * The judging half of contract Part 6, pure (unit-tested beside it): a table's check settings, the
 * population stability index, and a report's checks from its figures. The figures themselves are
 * measured by the engine (lib/engine/quality-figures.ts); lib/tables/quality.ts puts both together.
 */

/** Smoothing for a bin one side left empty (the contract's 0.0001), so PSI stays finite. */
export const PSI_EMPTY_BIN = 0.0001;

/**
 * PSI of `actual` against `expected`, both counts over the same bins (null is one of them):
 * sum over bins of (a - e) * ln(a / e) on the fractions, an empty bin counted as PSI_EMPTY_BIN.
 * Null when either side has no values at all (nothing to compare).
 */
export function populationStabilityIndex(expected: number[], actual: number[]): number | null {
  if (expected.length !== actual.length) throw new Error("PSI needs the same bins on both sides.");
  const expectedTotal = expected.reduce((sum, count) => sum + count, 0);
  const actualTotal = actual.reduce((sum, count) => sum + count, 0);
  if (expectedTotal <= 0 || actualTotal <= 0) return null;
  let psi = 0;
  for (const [bin, count] of expected.entries()) {
    const e = Math.max(count / expectedTotal, PSI_EMPTY_BIN);
    const a = Math.max(actual[bin]! / actualTotal, PSI_EMPTY_BIN);
    psi += (a - e) * Math.log(a / e);
  }
  return psi;
}

/** The table's settings: its overrides (OrderTable.checks) over the contract's defaults. */
export function checkSettings(overrides: unknown): Record<CheckName, CheckSetting> {
  const settings = { ...CHECK_DEFAULTS };
  if (overrides && typeof overrides === "object" && !Array.isArray(overrides)) {
    for (const [name, setting] of Object.entries(overrides as Record<string, Partial<CheckSetting>>)) {
      if (!(CHECK_NAMES as readonly string[]).includes(name) || !setting) continue;
      settings[name as CheckName] = { ...CHECK_DEFAULTS[name as CheckName], ...setting };
    }
  }
  return settings;
}

/**
 * `name=threshold[:hold|warn|off]` as given to table:checks --set; every fault is a sentence. The
 * level, when not given, stays what it is.
 */
export function parseCheckSetting(text: string, current: Record<CheckName, CheckSetting>) {
  const match = /^([^=]+)=([^:]*)(?::(.*))?$/.exec(text.trim());
  if (!match) throw invalid(`--set ${JSON.stringify(text)} is not name=threshold[:hold|warn|off].`);
  const [, name = "", thresholdText = "", level] = match;
  if (!(CHECK_NAMES as readonly string[]).includes(name)) {
    throw invalid(`There is no check named ${JSON.stringify(name)}; the checks are ${CHECK_NAMES.join(", ")}.`);
  }
  const threshold = thresholdText.trim() === "" ? Number.NaN : Number(thresholdText);
  if (!Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
    throw invalid(`The threshold of ${name} must be a number from 0 to 1, not ${JSON.stringify(thresholdText)}.`);
  }
  if (level !== undefined && level !== "hold" && level !== "warn" && level !== "off") {
    throw invalid(`The level of ${name} must be hold, warn or off, not ${JSON.stringify(level)}.`);
  }
  const checkName = name as CheckName;
  return { name: checkName, setting: { threshold, level: level ?? current[checkName].level } as CheckSetting };
}

const invalid = (message: string) => new AppError("invalid_argument", message);

export type ReportInput = Omit<QualityReport, "checks"> & { append: boolean };

/**
 * Every check the settings turn on that applies to this report (contract Part 6): an append version
 * skips the row-count and deletion checks; `row_count_drop` and `deleted_fraction` need previous
 * rows above 0; per-column checks need the current version's figures of that column.
 */
export function runChecks(report: ReportInput, settings: Record<CheckName, CheckSetting>): Check[] {
  const checks: Check[] = [];
  const add = (name: CheckName, column: string | null, value: number, fails: (threshold: number) => boolean) => {
    const { threshold, level } = settings[name];
    if (level === "off") return;
    const failed = fails(threshold);
    checks.push({
      name,
      column,
      value: round(value),
      threshold,
      level,
      outcome: !failed ? "passed" : level === "hold" ? "held" : "warned",
    });
  };
  const previousRows = report.previous_rows;
  if (!report.append) {
    add("row_count_zero", null, report.rows, (threshold) => report.rows <= threshold);
    if (previousRows !== null && previousRows > 0) {
      const drop = 1 - report.rows / previousRows;
      add("row_count_drop", null, drop, (threshold) => drop > threshold);
      const deleted = report.changes.deleted / previousRows;
      add("deleted_fraction", null, deleted, (threshold) => deleted > threshold);
    }
  }
  for (const column of report.columns) columnChecks(column, add);
  return checks;
}

function columnChecks(
  column: ColumnQuality,
  add: (name: CheckName, column: string, value: number, fails: (threshold: number) => boolean) => void,
) {
  if (column.previous_null_fraction !== null) {
    const increase = column.null_fraction - column.previous_null_fraction;
    add("null_fraction_increase", column.name, increase, (threshold) => increase > threshold);
  }
  if (column.previous_distinct !== null && column.previous_distinct >= 100) {
    const drop = 1 - column.distinct / column.previous_distinct;
    add("distinct_drop", column.name, drop, (threshold) => drop > threshold);
  }
  if (column.psi !== null) {
    const psi = column.psi;
    add("distribution_shift", column.name, psi, (threshold) => psi > threshold);
  }
}

/** Figures in a report are kept to 6 decimals: enough to read, and stable in JSON. */
export function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/** The gate's outcome: held when a hold-level check failed, else the quality the version gets. */
export function qualityOf(checks: Check[]): { held: boolean; quality: Quality } {
  const failed = checks.filter((check) => check.outcome !== "passed");
  return {
    held: failed.some((check) => check.outcome === "held"),
    quality: {
      status: failed.length === 0 ? "passed" : "warned",
      reason: null,
      checks: failed,
    },
  };
}
