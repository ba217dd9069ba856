import { db } from "../db/client";
import { AppError } from "../errors";
import { describeId, isTypedId } from "../ids";
import { jobTransaction } from "../queue";
import { queueExportRuns, runExport } from "./runs";
import { exportRunView, RUN_VIEW_SELECT, type ExportRunView } from "./views";

/**
 * "Export now" (the dashboard, `export:run`): a manual run of a delivered order to one destination
 * (or every enabled destination that takes the order), returned as the API shows runs. `buyerId`
 * scopes it to a buyer (the dashboard); the operator passes none.
 */
export async function exportNow(input: {
  orderId: string;
  destinationId?: string;
  buyerId?: string;
}): Promise<ExportRunView[]> {
  const order = isTypedId("ord", input.orderId)
    ? await db().order.findFirst({
        where: { id: input.orderId, ...(input.buyerId ? { buyerId: input.buyerId } : {}) },
        select: { id: true, buyerId: true, status: true },
      })
    : null;
  if (!order) throw new AppError("order_not_found", `No order ${describeId("ord", input.orderId)}.`);
  if (order.status !== "delivered") {
    throw new AppError("invalid_argument", `Order ${order.id} is ${order.status}: only delivered orders are exported.`);
  }
  if (input.destinationId !== undefined) {
    const destination = isTypedId("exd", input.destinationId)
      ? await db().exportDestination.findFirst({
          where: { id: input.destinationId, buyerId: order.buyerId },
          select: { enabled: true, name: true },
        })
      : null;
    if (!destination)
      throw new AppError("not_found", `No export destination ${input.destinationId} for this order's buyer.`);
    if (!destination.enabled) {
      throw new AppError("invalid_argument", `The destination “${destination.name}” is paused: resume it first.`);
    }
  }
  const ids = await jobTransaction((tx) =>
    queueExportRuns(tx, {
      buyerId: order.buyerId,
      orderId: order.id,
      trigger: "manual",
      destinationId: input.destinationId,
    }),
  );
  if (ids.length === 0) {
    throw new AppError(
      "invalid_argument",
      `No enabled export destination takes order ${order.id}: add one, or name one.`,
    );
  }
  return runViews(ids);
}

/**
 * `export:run --wait`: attempts each run here and now (a run another worker holds is watched until
 * it lets go), waiting out renditions being made, until each has completed, failed or been given a
 * retry for later (its error says why). Returns the runs as they stand.
 */
export async function waitForRuns(
  ids: string[],
  { pollMs = 1000 }: { pollMs?: number } = {},
): Promise<ExportRunView[]> {
  for (const id of ids) {
    for (;;) {
      const outcome = await runExport(id, { shared: false });
      if (outcome.result === "waiting") {
        await sleep(Math.max(0, outcome.nextAttemptAt.getTime() - Date.now()));
        continue;
      }
      if (outcome.result !== "skipped") break;
      const run = await db().exportRun.findUnique({ where: { id }, select: { state: true, leaseUntil: true } });
      if (!run || (run.state !== "pending" && run.state !== "running")) break; // over, or awaiting approval
      if (run.state === "pending" && !run.leaseUntil) break; // a retry is scheduled for later
      await sleep(pollMs);
    }
  }
  return runViews(ids);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs as the API shows them, in the order of `ids`. */
export async function runViews(ids: string[]): Promise<ExportRunView[]> {
  const rows = await db().exportRun.findMany({ where: { id: { in: ids } }, select: RUN_VIEW_SELECT });
  const byId = new Map(rows.map((row) => [row.id, exportRunView(row)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}
