import { sqlQuery } from "../db/client";

/**
 * Whether the database answers within `timeoutMs`. The answer never waits longer; the probe
 * itself gives up at the same deadline and closes its connection (or, still connecting, at the
 * pool's connect timeout), so probes of a stalled database do not pile up in the pool.
 */
export async function databaseIsUp(timeoutMs = 2000): Promise<boolean> {
  const ping = sqlQuery("SELECT 1", [], { timeoutMs }).then(
    () => true,
    () => false,
  );
  const deadline = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
  return Promise.race([ping, deadline]);
}
