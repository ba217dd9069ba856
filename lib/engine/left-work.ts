import { errorFields, logger } from "../log";
import { removeLeftDirectories } from "./left-directories";

/**
 * The server's and the worker's first step on the engine's temporary root: the directories of
 * processes that ended without removing them go (./left-directories.ts), said in the log; a failure
 * to remove is said, never fatal. Apart from ./left-directories.ts, which engine processes load
 * without the logger.
 */
export async function removeLeftWork(root: string): Promise<void> {
  try {
    const removed = await removeLeftDirectories(root);
    if (removed.length > 0) {
      logger().info({ root, removed: removed.length }, "removed the engine directories of processes that ended");
    }
  } catch (error) {
    logger().warn({ root, ...errorFields(error) }, "the engine directories of ended processes were not removed");
  }
}
