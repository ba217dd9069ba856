import { db } from "../db/client";
import { processSingleton } from "../singleton";
import { errorFields, logger } from "../log";

const SWEEP_INTERVAL_MS = 60 * 60 * 1000;
const sweeps = () => processSingleton("auth:sweeps", () => ({ lastAt: -Infinity }));

/** Deletes the sign-in links and sessions that have expired: next-auth refuses them anyway. */
export async function deleteExpiredSignInRecords(now = new Date()): Promise<{ sessions: number; links: number }> {
  const [sessions, links] = await Promise.all([
    db().session.deleteMany({ where: { expires: { lt: now } } }),
    db().verificationToken.deleteMany({ where: { expires: { lt: now } } }),
  ]);
  return { sessions: sessions.count, links: links.count };
}

/**
 * Starts a sweep of expired sign-in links and sessions, off the request path, at most once an
 * hour per process (and at the first call after start). Called by sign-in requests and signed-in
 * page views, the traffic that makes such records, so they never pile up. (next-auth itself
 * deletes an expired session when it is presented, and a sign-in link when it is used.)
 */
export function sweepExpiredSignInRecords(): void {
  const state = sweeps();
  if (Date.now() - state.lastAt < SWEEP_INTERVAL_MS) return;
  state.lastAt = Date.now();
  deleteExpiredSignInRecords().catch((error: Error) =>
    logger().error(errorFields(error), "deleting expired sign-in links and sessions failed"),
  );
}
