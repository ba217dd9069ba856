import { createHash } from "node:crypto";
import { sqlQuery, withAdvisoryLock } from "../db/client";
import { AppError } from "../errors";
import { formatBytes } from "../format";
import { countSubsetsEvicted } from "../metrics";

/**
 * An account's kept subset files fit its quota (contract Part 8): subsets are caches (the same
 * request makes one again), so before a new one is stored the account's least recently used ready
 * subsets (last handed to the buyer longest ago) are removed, object then row, until the new one
 * fits beside the rest. Fitting, storing and marking ready run under a lock per account (every
 * instance), so two of its subsets stored at once cannot both count the same free room.
 */

const DEFAULT_QUOTA_BYTES = 10 * 1024 ** 3;

/** Bytes of subset files an account keeps at most (`SUBSET_QUOTA_BYTES`, default 10 GiB). */
export function subsetQuotaBytes(): number {
  const configured = process.env.SUBSET_QUOTA_BYTES;
  if (!configured) return DEFAULT_QUOTA_BYTES;
  const bytes = Number(configured);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new Error(`SUBSET_QUOTA_BYTES must be a positive whole number of bytes, got "${configured}".`);
  }
  return bytes;
}

/** The buyer's error for a subset that alone is larger than the quota: it is never stored. */
function refuseOverQuota(size: number, quota = subsetQuotaBytes()): void {
  if (size <= quota) return;
  throw new AppError(
    "subset_too_large",
    `The subset is ${formatBytes(size)}, more than the ${formatBytes(quota)} of subsets an account keeps: ` +
      "narrow it (a filter, fewer columns) and ask again.",
  );
}

/**
 * Makes room for a subset of `size` bytes in the account's quota, then runs `store` (which stores
 * it and marks it ready), all under the account's lock. `remove` removes one kept subset (object,
 * then row), false when the store could not (then it is not counted as freed).
 */
export async function storeWithinQuota<T>(
  subset: { id: string; buyerId: string; size: number },
  remove: (kept: { id: string; storageKey: string }) => Promise<boolean>,
  store: () => Promise<T>,
): Promise<T> {
  const quota = subsetQuotaBytes();
  refuseOverQuota(subset.size, quota);
  return withAdvisoryLock(accountLockKey(subset.buyerId), async () => {
    const kept = await sqlQuery<{ id: string; storageKey: string; size: string }>(
      `SELECT s.id, s.storage_key AS "storageKey", s.size::text AS size
       FROM table_subsets s JOIN orders o ON o.id = s.order_id
       WHERE o.buyer_id = $1 AND s.status = 'ready' AND s.storage_key IS NOT NULL AND s.id <> $2
       ORDER BY s.last_used_at, s.created_at`,
      [subset.buyerId, subset.id],
    );
    let used = kept.reduce((sum, row) => sum + Number(row.size), 0);
    let evicted = 0;
    for (const row of kept) {
      if (used + subset.size <= quota) break;
      if (!(await remove(row))) continue;
      used -= Number(row.size);
      evicted++;
    }
    if (evicted) countSubsetsEvicted(evicted);
    // Only a store that would not remove its objects leaves no room: the job is tried again later.
    if (used + subset.size > quota) {
      throw new Error(`No room in the subset quota of account ${subset.buyerId}: kept subsets could not be removed.`);
    }
    return store();
  });
}

/** A session advisory lock key (bigint, 48 bits of a hash) per account's subset store. */
function accountLockKey(buyerId: string): number {
  return parseInt(createHash("sha256").update(`subset-quota:${buyerId}`).digest("hex").slice(0, 12), 16);
}
