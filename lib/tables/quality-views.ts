import { db } from "../db/client";
import {
  QUALITY_BEFORE_CHECKS,
  qualityReportSchema,
  qualitySchema,
  type Quality,
  type QualityReport,
} from "../schemas/quality";

/**
 * What the dashboard shows of each version's judging (contract Part 6): its quality (stored with
 * the version; NULL for versions made before the checks existed, answered as passed) and the
 * quality report its publication kept, plus the figures of the versions chart (rows and changes per
 * version over the table's history). Read by the version's publication id, which history.ts has
 * already scoped to the buyer's order.
 */

export type VersionQualityView = {
  quality: Quality;
  /** The publication's report, null when none was kept (versions from before the checks) or it reads as no report. */
  report: QualityReport | null;
};

/** One version in the chart: its rows and what it changed (0 each while its changes are being worked out). */
export type VersionPoint = { version: number; rows: number; inserted: number; updated: number; deleted: number };

/** The stored quality of a version as the dashboard answers it: NULL or unreadable JSON is "passed, no checks". */
export function readQuality(stored: unknown): Quality {
  if (stored === null || stored === undefined) return QUALITY_BEFORE_CHECKS;
  const parsed = qualitySchema.safeParse(stored);
  return parsed.success ? parsed.data : QUALITY_BEFORE_CHECKS;
}

/** The stored report of a publication, or null when there is none or it is not in the QualityReport shape. */
export function readReport(stored: unknown): QualityReport | null {
  if (stored === null || stored === undefined) return null;
  const parsed = qualityReportSchema.safeParse(stored);
  return parsed.success ? parsed.data : null;
}

/** Each version's quality and report, by the version's publication id. */
export async function versionQualities(
  versions: { publicationId: string; quality: unknown }[],
): Promise<Map<string, VersionQualityView>> {
  const publications = await db().tablePublication.findMany({
    where: { id: { in: versions.map((version) => version.publicationId) } },
    select: { id: true, report: true },
  });
  const reports = new Map(publications.map((publication) => [publication.id, readReport(publication.report)]));
  return new Map(
    versions.map((version) => [
      version.publicationId,
      { quality: readQuality(version.quality), report: reports.get(version.publicationId) ?? null },
    ]),
  );
}

/** The chart's points of each table, oldest first: its latest `length` kept versions. */
export async function versionPoints(tableIds: string[], length = 60): Promise<Map<string, VersionPoint[]>> {
  const points = new Map<string, VersionPoint[]>(tableIds.map((id) => [id, []]));
  await Promise.all(
    tableIds.map(async (tableId) => {
      const versions = await db().tableVersion.findMany({
        where: { tableId, prunedAt: null },
        orderBy: { version: "desc" },
        take: length,
        select: { version: true, rows: true, changes: true },
      });
      for (const version of versions.reverse()) {
        const changes = (version.changes ?? {}) as Partial<Record<"inserted" | "updated" | "deleted", number>>;
        points.get(tableId)!.push({
          version: version.version,
          rows: Number(version.rows),
          inserted: changes.inserted ?? 0,
          updated: changes.updated ?? 0,
          deleted: changes.deleted ?? 0,
        });
      }
    }),
  );
  return points;
}
