import { sqlQuery } from "../db/client";
import { errorFields, logger } from "../log";
import { processSingleton } from "../singleton";

/** last_used_at is written at most once a minute per key, not on every request. */
export const LAST_USED_RESOLUTION_MS = 60_000;
/** Uses noted in this process go to the database together, this often. */
const FLUSH_INTERVAL_MS = 1_000;

type Pending = { uses: Map<string, Date>; timer?: ReturnType<typeof setTimeout> };

/**
 * Notes that a key was used, off the request path: uses are collected in the process and written
 * by one statement a second for all keys (one write per request through Prisma cost more CPU than
 * the rest of the request once thousands of keys were in use: bench/api-accounts.ts). A crash loses
 * at most the last second's notes, which only delays a "last used" time shown in the dashboard.
 */
export function noteKeyUse(keyId: string, at: Date): void {
  const pending = processSingleton<Pending>("keys:last-used", () => ({ uses: new Map() }));
  pending.uses.set(keyId, at);
  pending.timer ??= setTimeout(() => void flush(pending), FLUSH_INTERVAL_MS).unref();
}

async function flush(pending: Pending): Promise<void> {
  const uses = pending.uses;
  pending.uses = new Map();
  pending.timer = undefined;
  // Only a stale value is overwritten, so instances writing the same key keep to one write a minute.
  await sqlQuery(
    `UPDATE api_keys AS k SET last_used_at = u.used_at
     FROM unnest($1::text[], $2::timestamptz[]) AS u(id, used_at)
     WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.used_at - make_interval(secs => $3))`,
    [[...uses.keys()], [...uses.values()], LAST_USED_RESOLUTION_MS / 1000],
  ).catch((error: Error) => logger().warn({ keys: uses.size, ...errorFields(error) }, "last_used_at not recorded"));
}
