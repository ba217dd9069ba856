import { db } from "../db/client";
import { AppError } from "../errors";
import { describeId, isTypedId } from "../ids";
import { exportRunView, RUN_VIEW_SELECT, type ExportRunView } from "./views";

/**
 * The reads behind GET /api/v1/exports and GET /api/v1/exports/{id} (read-only, datasets:read):
 * a buyer's export runs, scoped by buyer in every query. Another buyer's run and a malformed id
 * are answered like a missing one: 404 export_not_found.
 */

/** One page of the buyer's runs, newest first with the id as the tiebreak (as the order list: `{data, next_offset}`). */
export async function exportRunPage(
  buyerId: string,
  page: { limit: number; offset: number },
): Promise<{ data: ExportRunView[]; next_offset: number | null }> {
  const rows = await db().exportRun.findMany({
    where: { buyerId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    skip: page.offset,
    take: page.limit + 1,
    select: RUN_VIEW_SELECT,
  });
  return {
    data: rows.slice(0, page.limit).map(exportRunView),
    next_offset: rows.length > page.limit ? page.offset + page.limit : null,
  };
}

/** One of the buyer's runs. */
export async function exportRun(buyerId: string, runId: string): Promise<ExportRunView> {
  const row = isTypedId("exr", runId)
    ? await db().exportRun.findFirst({ where: { id: runId, buyerId }, select: RUN_VIEW_SELECT })
    : null;
  if (!row) throw new AppError("export_not_found", `No export run ${describeId("exr", runId)} for this account.`);
  return exportRunView(row);
}

/** The runs of one destination of the buyer, newest first, for the dashboard (with what it shows beside the API's fields). */
export async function destinationRuns(buyerId: string, destinationId: string, limit = 20) {
  const rows = await db().exportRun.findMany({
    where: { buyerId, destinationId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit,
    select: {
      ...RUN_VIEW_SELECT,
      skipped: true,
      createdAt: true,
      nextAttemptAt: true,
      attempts: true,
      tableName: true,
      tableVersion: true,
    },
  });
  return rows.map((row) => ({
    ...exportRunView(row),
    skipped: row.skipped,
    tableName: row.tableName,
    tableVersion: row.tableVersion,
    createdAt: row.createdAt,
    nextAttemptAt: row.nextAttemptAt,
    attempts: row.attempts,
  }));
}
