/**
 * What the server's side knows of the DuckDB instances an engine process keeps between queries of
 * the same files (./kept-engine.ts): how long one waits for its next query. Their private
 * directories are named by the process's id (./left-directories.ts), so that the pool removes
 * those of a process that ended without closing them. No DuckDB here: the server's own process imports it.
 */

/**
 * How long a kept instance waits for its next query before it is closed
 * (`DATASET_QUERY_KEEP_SECONDS`, default 60; 0: none is kept, every query gets an instance of its own).
 */
export function keptIdleMs(env: Record<string, string | undefined> = process.env): number {
  const seconds = Number(env.DATASET_QUERY_KEEP_SECONDS || 60);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new Error(
      `DATASET_QUERY_KEEP_SECONDS must be a number of seconds, 0 or more, got "${env.DATASET_QUERY_KEEP_SECONDS}".`,
    );
  }
  return seconds * 1000;
}
