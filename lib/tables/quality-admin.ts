import { db, type Prisma } from "../db/client";
import { AppError } from "../errors";
import { logger } from "../log";
import { QUEUES, sendJob, jobTransaction } from "../queue";
import { findOrderForOperator } from "../orders/files";
import { CHECK_DEFAULTS, CHECK_NAMES, type CheckName, type CheckSetting } from "../schemas/quality";
import { checkSettings, parseCheckSetting } from "./quality-checks";
import { queueNext } from "./pipeline";

/**
 * What operators do with the gate (contract Part 6): a table's check thresholds (table:checks), and
 * a held publication released as the next version or rejected (table:release, table:reject). Each
 * decision takes the publication's row lock, so of two operators deciding at once one wins and the
 * other is told what became of it.
 */

export type CheckRow = { name: CheckName; threshold: number; level: CheckSetting["level"]; default: boolean };

/** `table:checks`: the table's settings, after applying every `--set` (all of them, or none if one is refused). */
export async function tableChecks(orderId: string, tableName: string, sets: string[] = []): Promise<CheckRow[]> {
  await findOrderForOperator(orderId);
  const settings = await db().$transaction(async (tx) => {
    const [table] = await tx.$queryRaw<{ id: string; checks: unknown }[]>`
      SELECT id, checks FROM order_tables WHERE order_id = ${orderId} AND name = ${tableName} FOR UPDATE`;
    if (!table) {
      throw new AppError("table_not_found", `Order ${orderId} has no table named ${JSON.stringify(tableName)}.`);
    }
    const current = checkSettings(table.checks);
    if (sets.length === 0) return current;
    // Every --set is parsed before anything is written: one refused leaves the table as it was.
    const changed = { ...current };
    for (const text of sets) {
      const { name, setting } = parseCheckSetting(text, changed);
      changed[name] = setting;
    }
    const overrides = Object.fromEntries(
      CHECK_NAMES.filter((name) => !sameSetting(changed[name], CHECK_DEFAULTS[name])).map((name) => [
        name,
        changed[name],
      ]),
    );
    await tx.orderTable.update({ where: { id: table.id }, data: { checks: overrides as Prisma.InputJsonValue } });
    return changed;
  });
  return CHECK_NAMES.map((name) => ({
    name,
    ...settings[name],
    default: sameSetting(settings[name], CHECK_DEFAULTS[name]),
  }));
}

const sameSetting = (a: CheckSetting, b: CheckSetting) => a.threshold === b.threshold && a.level === b.level;

export type Decision = { id: string; status: "processing" | "failed"; reason: string };

/** `table:release`: the held publication becomes the table's next version, its quality `released` with the reason. */
export function releasePublication(publicationId: string, reason: string): Promise<Decision> {
  return decide(publicationId, reason, "release");
}

/** `table:reject`: the held publication fails with the reason; the table keeps its current version. */
export function rejectPublication(publicationId: string, reason: string): Promise<Decision> {
  return decide(publicationId, reason, "reject");
}

/** An operator's reason is kept with the publication and shown to buyers (released): a sentence, not a file. */
export const REASON_MAX_CHARS = 2000;

async function decide(publicationId: string, reasonText: string, action: "release" | "reject"): Promise<Decision> {
  const reason = reasonText.trim();
  if (!reason)
    throw new AppError(
      "invalid_argument",
      `--reason is required: say why the publication is ${action === "release" ? "released" : "rejected"}.`,
    );
  if (reason.length > REASON_MAX_CHARS || /[\u0000-\u0008\u000b-\u001f\u007f]/.test(reason)) {
    throw new AppError(
      "invalid_argument",
      `--reason must be at most ${REASON_MAX_CHARS} characters of text without control characters.`,
    );
  }
  const decision = await jobTransaction(async (tx) => {
    const [publication] = await tx.$queryRaw<
      { table_id: string; status: string; version: number | null; reason: string | null; report: unknown }[]
    >`SELECT table_id, status::text AS status, version, reason, report FROM table_publications
      WHERE id = ${publicationId} FOR UPDATE`;
    if (!publication) {
      throw new AppError("publication_not_found", `There is no publication ${JSON.stringify(publicationId)}.`);
    }
    if (publication.status !== "held") throw notHeld(publicationId, publication);
    if (action === "release") {
      await tx.tablePublication.update({ where: { id: publicationId }, data: { status: "processing", reason } });
      await sendJob(QUEUES.tablePublication, { publicationId }, { tx });
      return { id: publicationId, status: "processing" as const, reason };
    }
    await tx.tablePublication.update({
      where: { id: publicationId },
      data: { status: "failed", reason, error: `Rejected by the operator: ${reason}`, finishedAt: new Date() },
    });
    await queueNext(tx, publication.table_id);
    return { id: publicationId, status: "failed" as const, reason };
  });
  logger().info(
    { publicationId, action },
    action === "release" ? "held publication released" : "held publication rejected",
  );
  return decision;
}

/** Why a publication cannot be released or rejected, saying what became of it. */
function notHeld(
  id: string,
  publication: { status: string; version: number | null; reason: string | null; report: unknown },
): AppError {
  const released = publication.reason !== null && publication.report !== null;
  const what =
    publication.status === "ready"
      ? released
        ? `it was already released and is version ${publication.version}`
        : `it passed its checks and is version ${publication.version}`
      : publication.status === "failed"
        ? publication.reason !== null
          ? "it was already rejected"
          : "it failed"
        : publication.status === "processing" && released
          ? "it was already released and is being made a version"
          : `it is ${publication.status}`;
  return new AppError(
    "publication_not_held",
    `Publication ${id} is not held: ${what}. Only a held one is released or rejected.`,
  );
}
