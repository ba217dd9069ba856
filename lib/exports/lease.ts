import { setMaxListeners } from "node:events";
import { sqlQuery } from "../db/client";
import { stallTimeoutMs } from "./targets/target";

/**
 * A run's lease while an attempt works on it: renewed every third of LEASE_MS, but only while the
 * attempt moves (a file checked or copied, bytes sent). An attempt that moved nothing for its idle
 * limit (twice the stall timeout) is stopped, its requests aborted and its lease let go, whatever
 * the store is doing meanwhile: a store that answers forever (a header line at a time, a listing
 * that never ends) cannot keep a worker by keeping the run busy. The run is retried on its schedule
 * like any failed attempt.
 */

/** A run's lease: a dead worker's run is free again this soon. */
export const LEASE_MS = 120_000;
/**
 * An attempt that moved nothing for this long gives up its lease: three times a request's stall timeout (3 minutes by
 * default). Longer than a store request's own bounds (two tries of the stall timeout each, and the pause between), so
 * a store that hangs fails with its own timeout, which says what happened, and this limit stops only what those
 * bounds cannot (a store that answers a byte at a time). At twice, the two raced (CI failed once on which came first).
 */
export function attemptIdleLimitMs(): number {
  return 3 * stallTimeoutMs();
}

export type HeldLease = {
  /** Aborted when the lease is lost (taken over, deleted) or let go for want of progress; its reason says which. */
  readonly signal: AbortSignal;
  /** The attempt moved: a file was checked or copied, or bytes were sent. */
  moved(): void;
  stop(): void;
};

/**
 * Holds a lease through `renew` (true while the lease is still this attempt's). `now` and the
 * intervals are injectable for tests.
 */
export function holdLease(
  renew: () => Promise<boolean>,
  {
    leaseMs = LEASE_MS,
    idleLimitMs = attemptIdleLimitMs(),
    now = Date.now,
    onRenewError = () => {},
  }: { leaseMs?: number; idleLimitMs?: number; now?: () => number; onRenewError?: (error: unknown) => void } = {},
): HeldLease {
  const controller = new AbortController();
  // Every file copied at once listens to it (16 small ones): not a leak.
  setMaxListeners(64, controller.signal);
  let lastMoved = now();
  let lastRenewed = now();
  // Looked at often enough to stop an idle attempt near its limit; renewed every third of the lease.
  const timer = setInterval(
    () => {
      if (controller.signal.aborted) return;
      const idle = now() - lastMoved;
      if (idle >= idleLimitMs) {
        clearInterval(timer);
        controller.abort(
          new Error(
            `nothing moved for ${Math.round(idle / 1000)} s (no file checked or copied, no byte sent): the attempt was stopped`,
          ),
        );
        return;
      }
      if (now() - lastRenewed < leaseMs / 3) return;
      lastRenewed = now();
      renew().then((held) => {
        if (!held) controller.abort(new Error("the run was taken over or deleted while it copied"));
      }, onRenewError);
    },
    Math.min(leaseMs / 3, idleLimitMs / 4),
  );
  timer.unref();
  return {
    signal: controller.signal,
    moved: () => {
      lastMoved = now();
    },
    stop: () => clearInterval(timer),
  };
}

/** Extends a run's lease by LEASE_MS from now; false when the run is no longer this attempt's. */
export async function renewRunLease(runId: string, token: string): Promise<boolean> {
  const rows = await sqlQuery<{ id: string }>(
    `UPDATE export_runs SET lease_until = $3 WHERE id = $1 AND lease_token = $2 RETURNING id`,
    [runId, token, new Date(Date.now() + LEASE_MS)],
  );
  return rows.length > 0;
}
