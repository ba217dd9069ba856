import { AppError } from "../errors";
import { describeId, isTypedId } from "../ids";
import { jobTransaction, QUEUES, sendJob } from "../queue";

/**
 * The buyer's decision on a run awaiting approval (a table version whose quality is not passed, to
 * a destination with approval on_warning: ./runs.ts queueExportRuns): approving makes it pending
 * with its job, so a worker runs it; skipping ends it as skipped. Scoped to the buyer's own runs
 * (another buyer's run reads as a missing one); a run not awaiting approval is refused, saying its
 * state, so two clicks (or two tabs) decide once.
 */
export async function decideRun(buyerId: string, runId: string, decision: "approve" | "skip", at = new Date()) {
  if (!isTypedId("exr", runId)) throw runNotFound(runId);
  return jobTransaction(async (tx) => {
    const { count } = await tx.exportRun.updateMany({
      where: { id: runId, buyerId, state: "awaiting_approval" },
      data:
        decision === "approve"
          ? { state: "pending", nextAttemptAt: at }
          : { state: "skipped", finishedAt: at, nextAttemptAt: null },
    });
    if (count === 1) {
      if (decision === "approve") await sendJob(QUEUES.exportRun, { runId }, { tx });
      return { state: decision === "approve" ? ("pending" as const) : ("skipped" as const) };
    }
    const run = await tx.exportRun.findFirst({ where: { id: runId, buyerId }, select: { state: true } });
    if (!run) throw runNotFound(runId);
    throw new AppError(
      "invalid_argument",
      `This export run is ${run.state.replace("_", " ")}, not awaiting approval: there is nothing to ${decision}.`,
    );
  });
}

function runNotFound(runId: string): AppError {
  return new AppError("export_not_found", `No export run ${describeId("exr", runId)} for this account.`);
}
