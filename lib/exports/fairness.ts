import { db } from "../db/client";

/**
 * Export workers shared between destinations: one destination's runs hold at most its share of a
 * worker's export loops at once (half of EXPORT_CONCURRENCY, at least one), counted over every
 * worker by the live leases in the database. So whatever a buyer's store does (answer forever,
 * stall, take every run of many orders), the other loops stay free for other destinations, and
 * another buyer's run starts as soon as a loop polls (within seconds). A run over its
 * destination's share waits for a few seconds without spending an attempt.
 */

/** Export runs a worker runs at once (`EXPORT_CONCURRENCY`, default 2), apart from its other jobs. */
export function exportConcurrency(): number {
  return Math.max(1, Number(process.env.EXPORT_CONCURRENCY) || 2);
}

/** Runs of one destination that may hold a lease at once. */
export function destinationShare(concurrency = exportConcurrency()): number {
  return Math.max(1, Math.floor(concurrency / 2));
}

/** A run over its destination's share is looked at again this soon. */
export const SHARE_RETRY_MS = 5_000;

export type TakenRun = {
  id: string;
  buyerId: string;
  orderId: string;
  trigger: string;
  tableName: string | null;
  tableVersion: number | null;
  attempts: number;
  createdAt: Date;
  leaseToken: string;
};

/**
 * Takes a due run's lease for an attempt (counting it), unless another worker holds it, its next
 * attempt is not due, its attempts are spent, or (with `share`) its destination already has `share`
 * runs leased. The destination is locked for the count and the take, so two workers never both see
 * room for one. Returns the run, or why not: "unavailable" (see the run) or "over share".
 */
export async function takeRun(input: {
  runId: string;
  token: string;
  at: Date;
  leaseUntil: Date;
  maxAttempts: number;
  share: number | null;
}): Promise<TakenRun | "unavailable" | "over share"> {
  const { runId, token, at, leaseUntil, maxAttempts, share } = input;
  return db().$transaction(async (tx) => {
    const [target] = await tx.$queryRaw<{ destinationId: string }[]>`
      SELECT destination_id AS "destinationId" FROM export_runs WHERE id = ${runId}`;
    if (!target) return "unavailable";
    if (share !== null) {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`export-destination:${target.destinationId}`}, 0))`;
      const [counted] = await tx.$queryRaw<{ leased: number }[]>`
        SELECT count(*)::int AS leased FROM export_runs
        WHERE destination_id = ${target.destinationId} AND id <> ${runId}
          AND state = 'running' AND lease_until > ${at}`;
      if ((counted?.leased ?? 0) >= share) {
        // Over its share only matters for a run that could start now.
        const [due] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM export_runs WHERE id = ${runId} AND state IN ('pending', 'running')
            AND (lease_until IS NULL OR lease_until <= ${at})
            AND (next_attempt_at IS NULL OR next_attempt_at <= ${at}) AND attempts < ${maxAttempts}`;
        return due ? "over share" : "unavailable";
      }
    }
    const [run] = await tx.$queryRaw<TakenRun[]>`
      UPDATE export_runs SET state = 'running', lease_until = ${leaseUntil}, lease_token = ${token},
             attempts = attempts + 1, started_at = coalesce(started_at, ${at})
      WHERE id = ${runId} AND state IN ('pending', 'running')
        AND (lease_until IS NULL OR lease_until <= ${at})
        AND (next_attempt_at IS NULL OR next_attempt_at <= ${at})
        AND attempts < ${maxAttempts}
      RETURNING id, buyer_id AS "buyerId", order_id AS "orderId", trigger::text AS trigger, table_name AS "tableName",
                table_version AS "tableVersion", attempts, created_at AS "createdAt", lease_token AS "leaseToken"`;
    return run ?? "unavailable";
  });
}
