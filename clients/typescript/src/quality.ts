import type { Version } from "./client.js";
import type { components } from "./generated/api.js";
import { forTerminal } from "./terminal.js";

/** One check of a publication against the table's version before it. */
export type QualityCheck = components["schemas"]["Check"];
/** How a version was judged: passed, warned (a warn-level check did not pass), released (held, then released). */
export type Quality = Version["quality"];
export type ColumnQuality = components["schemas"]["ColumnQuality"];
/** A version's quality report, as `GET .../versions/{version}/quality` answers it. */
export type QualityReport = components["schemas"]["QualityReport"];

/** A version's quality; a server from before the checks sends none, which reads as passed. */
export function qualityOf(version: Version): Quality {
  const quality = (version as Omit<Version, "quality"> & { quality?: Quality | null }).quality;
  return quality ?? { status: "passed", reason: null, checks: [] };
}

/** Why a version is not applied: the sentence `changes` reports and prints. */
export function notPassedReason(table: string, version: number, quality: Quality): string {
  const reason = quality.reason ? ` (${quality.reason})` : "";
  return `${table} version ${version} was not applied: its quality is ${quality.status}${reason}, not passed; nothing of it or of later versions was applied. Read its report with \`dataset-access quality\`, and pass --accept-warnings to apply it.`;
}

const count = (value: number) => value.toLocaleString("en-US");
const percent = (value: number | null) => (value === null ? "-" : `${(value * 100).toFixed(1)}%`);
const decimal = (value: number | null) => (value === null ? "-" : value.toFixed(3));

/** A check's value as its kind reads: a row count, a PSI, or a fraction as a percentage. */
function checkFigure(name: string, value: number): string {
  if (name === "row_count_zero") return count(value);
  if (name === "distribution_shift") return decimal(value);
  return percent(value);
}

function aligned(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join("  ")
      .trimEnd(),
  );
}

/** The report for a person: its status, rows against the previous version, checks and columns; server strings escaped. */
export function formatQualityReport(table: string, version: number, quality: Quality, report: QualityReport): string {
  const lines = [`${forTerminal(table)} version ${version}: ${quality.status}`];
  if (quality.reason) lines.push(`Reason: ${forTerminal(quality.reason)}`);
  const previous =
    report.previous_rows === null
      ? "first version"
      : `previous ${count(report.previous_rows)}${report.previous_rows > 0 ? `, ${((report.rows / report.previous_rows - 1) * 100).toFixed(1)}%` : ""}`;
  lines.push(`Rows: ${count(report.rows)} (${previous})`);
  const { inserted, updated, deleted } = report.changes;
  lines.push(`Changes: ${count(inserted)} inserted, ${count(updated)} updated, ${count(deleted)} deleted`);
  lines.push(
    `Added columns: ${report.added_columns.length ? report.added_columns.map(forTerminal).join(", ") : "none"}`,
  );
  lines.push("", "Checks:");
  lines.push(
    ...aligned([
      ["CHECK", "COLUMN", "VALUE", "THRESHOLD", "LEVEL", "OUTCOME"],
      ...report.checks.map((check) => [
        forTerminal(check.name),
        check.column === null ? "-" : forTerminal(check.column),
        checkFigure(check.name, check.value),
        checkFigure(check.name, check.threshold),
        forTerminal(check.level),
        forTerminal(check.outcome),
      ]),
    ]),
  );
  lines.push("", "Columns:");
  lines.push(
    ...aligned([
      ["COLUMN", "TYPE", "NULL", "NULL BEFORE", "DISTINCT", "PSI"],
      ...report.columns.map((column) => [
        forTerminal(column.name),
        forTerminal(column.type),
        percent(column.null_fraction),
        percent(column.previous_null_fraction),
        count(column.distinct),
        decimal(column.psi),
      ]),
    ]),
  );
  return lines.join("\n");
}
