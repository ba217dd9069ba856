import { db, type Prisma } from "../db/client";
import { duckdbMessageFor, withTempDir } from "../engine/engine";
import { runEngineTask } from "../engine/engine-pool";
import type { Column } from "../engine/engine-tasks";
import type { QualityFigures, VersionFigures } from "../engine/quality-figures";
import { localCopy } from "../datasets/source";
import { deliverNoticeMail } from "../auth/mail";
import { errorFields, logger } from "../log";
import { countTablePublication } from "../metrics";
import type { ColumnQuality, Quality, QualityReport } from "../schemas/quality";
import { checkSettings, populationStabilityIndex, qualityOf, round, runChecks } from "./quality-checks";
import type { Changes } from "./changes";

/**
 * A publication's quality report and the gate (contract Part 6). The pipeline (./pipeline.ts)
 * measures the new parts in an engine process alongside its key check and change file
 * (measurePublication), then judges them with the change counts (judgePublication): a hold-level
 * check that fails makes the publication `held` (holdPublication), else the version is made with
 * its quality and figures. A held publication's change file is not kept: table:release queues it
 * again and the pipeline makes the change file anew (same parts, same previous version: the same
 * file), reusing the stored report and figures (./quality-admin.ts).
 */

/** TABLE_QUALITY_CHECKS=off skips the report and the checks: only for bench/quality.ts to measure their cost. */
export const qualityChecksOn = () => process.env.TABLE_QUALITY_CHECKS !== "off";

/** The figures of the publication's parts (their Parquet renditions) against the current version's stored figures. */
export async function measurePublication(
  parts: { renditions: { storageKey: string | null }[] }[],
  /** The current version's stored figures (JSON; null or absent for a version made before the checks). */
  previous: unknown,
): Promise<QualityFigures | { error: string }> {
  return withTempDir(async (workDir) => {
    const local = [];
    for (const [index, part] of parts.entries()) {
      local.push(await localCopy(part.renditions[0]!.storageKey!, workDir, `part-${index}.parquet`));
    }
    try {
      const input = { parts: local, previous: (previous ?? null) as VersionFigures | null };
      return await runEngineTask("qualityFigures", input, { directory: workDir, readable: local });
    } catch (error) {
      logger().warn({ ...errorFields(error) }, "quality figures not measured");
      return { error: `Its quality report could not be made: ${duckdbMessageFor(error, "the parts", [workDir])}` };
    }
  });
}

type Previous = { rows: bigint; columns: unknown; figures: unknown } | null;

/** The report of a publication from its measured figures, the current version and the change counts. */
export function qualityReport(input: {
  measured: QualityFigures;
  columns: Column[];
  previous: Previous;
  changes: Changes;
  append: boolean;
  checks: unknown;
}): QualityReport {
  const { measured, previous } = input;
  const before = previous?.figures ? (previous.figures as VersionFigures) : null;
  const previousNames = new Set(((previous?.columns ?? []) as Column[]).map((column) => column.name));
  const types = new Map(input.columns.map((column) => [column.name, column.type]));
  const fraction = (part: number, whole: number) => (whole > 0 ? round(part / whole) : 0);
  const columns = measured.columns.map((column): ColumnQuality => {
    const old = before?.columns[column.name];
    const psi = old && column.againstPrevious ? populationStabilityIndex(old.bins, column.againstPrevious) : null;
    return {
      name: column.name,
      type: types.get(column.name) ?? column.type,
      null_fraction: fraction(column.nulls, measured.rows),
      previous_null_fraction: old ? fraction(old.nulls, before!.rows) : null,
      distinct: column.distinct,
      previous_distinct: old ? old.distinct : null,
      min: column.min as ColumnQuality["min"],
      max: column.max as ColumnQuality["max"],
      mean: column.mean,
      psi: psi === null ? null : round(psi),
    };
  });
  const report = {
    rows: measured.rows,
    previous_rows: previous ? Number(previous.rows) : null,
    changes: input.changes,
    added_columns: previous ? input.columns.map((c) => c.name).filter((name) => !previousNames.has(name)) : [],
    columns,
  };
  return { ...report, checks: runChecks({ ...report, append: input.append }, checkSettings(input.checks)) };
}

/** What a judged publication goes on with: held, or made a version with this quality. */
export function verdictOf(report: QualityReport): { held: boolean; quality: Quality } {
  return qualityOf(report.checks);
}

/**
 * Marks the publication held with its report and figures (it is not a version; later publications of
 * the table wait behind it), tells the operator by e-mail where OPERATOR_EMAIL is set, and counts it.
 */
export async function holdPublication(
  publicationId: string,
  table: { orderId: string; name: string },
  measured: { report: QualityReport; figures: VersionFigures },
): Promise<boolean> {
  const held = await db().tablePublication.updateMany({
    where: { id: publicationId, status: "processing" },
    data: {
      status: "held",
      report: measured.report as unknown as Prisma.InputJsonValue,
      figures: measured.figures as unknown as Prisma.InputJsonValue,
    },
  });
  if (held.count === 0) return false;
  countTablePublication("held");
  const failed = measured.report.checks.filter((check) => check.outcome === "held");
  logger().info({ publicationId, table: table.name, checks: failed.map((check) => check.name) }, "publication held");
  const to = process.env.OPERATOR_EMAIL;
  if (to) {
    const lines = failed.map(
      (check) =>
        `- ${check.name}${check.column ? ` (column ${check.column})` : ""}: ${check.value} against the threshold ${check.threshold}`,
    );
    await deliverNoticeMail({
      to,
      subject: `Publication held: table ${table.name} of order ${table.orderId}`,
      text: [
        `Publication ${publicationId} of table ${table.name} (order ${table.orderId}) was held by its quality checks:`,
        "",
        ...lines,
        "",
        `Later publications of the table wait behind it. See the report with table:versions, then run`,
        `table:release --publication ${publicationId} --reason TEXT, or table:reject with a reason.`,
      ].join("\n"),
    }).catch((error: unknown) => logger().warn({ publicationId, ...errorFields(error) }, "held e-mail not sent"));
  }
  return true;
}

/** The quality a released publication's version gets: released, the reason, the checks that did not pass. */
export function releasedQuality(report: QualityReport, reason: string): Quality {
  return { status: "released", reason, checks: report.checks.filter((check) => check.outcome !== "passed") };
}

/** The stored report of a publication the operator released (processing again, with its reason), if it is one. */
export function releasedReport(publication: {
  report: unknown;
  figures: unknown;
  reason: string | null;
}): { report: QualityReport; figures: VersionFigures | null; reason: string } | null {
  if (!publication.report || publication.reason === null) return null;
  return {
    report: publication.report as QualityReport,
    figures: (publication.figures as VersionFigures | null) ?? null,
    reason: publication.reason,
  };
}
