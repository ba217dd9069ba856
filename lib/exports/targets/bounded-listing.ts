import { logger } from "../../log";
import { listingBudget } from "./listing";
import type { ExportTarget, Present } from "./target";

/**
 * `folder`'s listing within its bounds, or null: past a bound, at the deadline, or refused (a key
 * that may write but not list: a put-only policy, a SAS without list). Then each file is asked about.
 */
export async function listOrGiveUp(
  target: ExportTarget,
  folder: string,
  deadline: AbortSignal,
  onPage?: () => void,
): Promise<Map<string, Present> | null> {
  let reason = "past its bounds";
  const listed = await target.list(folder, listingBudget(deadline, { onPage })).catch((error: unknown) => {
    reason = deadline.aborted ? "deadline passed" : `refused: ${(error as Error).name}`;
    return null;
  });
  if (!listed) logger().info({ folder, reason }, "export: listing given up, checking file by file");
  return listed;
}
