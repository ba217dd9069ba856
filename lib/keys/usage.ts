import { CommitOutcomeUnknownError, sqlQuery, sqlTransaction } from "../db/client";
import { errorFields, logger } from "../log";
import { processSingleton } from "../singleton";

/** The outcome of an /api/v1 answer, as counted and charted: the database enum's labels. */
export type UsageOutcome = "2xx" | "4xx" | "429" | "5xx";
export const USAGE_OUTCOMES: UsageOutcome[] = ["2xx", "4xx", "429", "5xx"];

export function outcomeOf(status: number): UsageOutcome {
  if (status === 429) return "429";
  if (status >= 500) return "5xx";
  if (status >= 400) return "4xx";
  return "2xx";
}

export const USAGE_RETENTION_DAYS = 90;
const HOUR_MS = 3_600_000;

type Counters = { counts: Map<string, number>; timer?: ReturnType<typeof setTimeout>; nextPruneAt: number };

const counters = () => processSingleton<Counters>("keys:usage", () => ({ counts: new Map(), nextPruneAt: 0 }));

/** How long counts wait in the process before they are written (USAGE_FLUSH_INTERVAL_MS, default 5 s). */
function flushIntervalMs(): number {
  const value = Number(process.env.USAGE_FLUSH_INTERVAL_MS);
  return Number.isFinite(value) && value > 0 ? value : 5_000;
}

/** Whether answers are counted at all (API_USAGE_COUNTING=off turns it off, e.g. to measure its cost). */
export function usageCountingEnabled(): boolean {
  return process.env.API_USAGE_COUNTING !== "off";
}

/**
 * Counts one /api/v1 answer for a key, off the request path: counts add up in the process and are
 * written by one statement every few seconds for all keys (an upsert adding to the hour's row). A
 * crash loses at most the counts of that interval; a clean shutdown writes them (flushUsage); a
 * write the database refused or never got (down, frozen, a table locked by a migration) is tried
 * again at the next flush, so an outage the process lives through loses nothing.
 */
export function countKeyUse(keyId: string, status: number, at = new Date()): void {
  if (!usageCountingEnabled()) return;
  addCount(counters(), `${keyId}|${hourOf(at)}|${outcomeOf(status)}`, 1);
}

let lastHour = { start: NaN, iso: "" };
/** The hour `at` falls in, as an ISO timestamp: made once an hour, not once a request. */
function hourOf(at: Date): string {
  const start = Math.floor(at.getTime() / HOUR_MS) * HOUR_MS;
  if (start !== lastHour.start) lastHour = { start, iso: new Date(start).toISOString() };
  return lastHour.iso;
}

/** Adds to a slot's count and makes sure a flush is coming. */
function addCount(state: Counters, slot: string, count: number): void {
  state.counts.set(slot, (state.counts.get(slot) ?? 0) + count);
  state.timer ??= setTimeout(() => void flushUsage(), flushIntervalMs()).unref();
}

/** Writes the counts made so far (and, once an hour, deletes rows past the retention). */
export async function flushUsage(): Promise<void> {
  const state = counters();
  clearTimeout(state.timer);
  state.timer = undefined;
  const counts = state.counts;
  if (counts.size === 0) return;
  state.counts = new Map();
  try {
    await writeCounts(counts);
  } catch (error) {
    // Surely not written: back into the process for the next flush. Only a COMMIT left unanswered
    // may have been written; counting it again could double it, so it is given up (at most one interval).
    const unknown = error instanceof CommitOutcomeUnknownError;
    if (!unknown) for (const [slot, count] of counts) addCount(state, slot, count);
    logger().warn(
      { slots: counts.size, ...errorFields(error) },
      unknown ? "API usage counts may be lost" : "API usage counts not recorded yet, kept for the next flush",
    );
    return;
  }
  await pruneExpiredUsage(state);
}

async function writeCounts(counts: Map<string, number>): Promise<void> {
  const keys: string[] = [];
  const hours: string[] = [];
  const outcomes: string[] = [];
  const values: number[] = [];
  for (const [slot, count] of counts) {
    const [keyId, hour, outcome] = slot.split("|") as [string, string, string];
    keys.push(keyId);
    hours.push(hour);
    outcomes.push(outcome);
    values.push(count);
  }
  // A key deleted meanwhile has no row to count against: the join drops its counts.
  await sqlTransaction(
    `INSERT INTO api_key_usage (key_id, hour, outcome, count)
     SELECT u.key_id, u.hour, u.outcome::usage_outcome, u.count
     FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::int[]) AS u(key_id, hour, outcome, count)
     JOIN api_keys k ON k.id = u.key_id
     ON CONFLICT (key_id, hour, outcome) DO UPDATE SET count = api_key_usage.count + EXCLUDED.count`,
    [keys, hours, outcomes, values],
  );
}

async function pruneExpiredUsage(state: Counters): Promise<void> {
  if (Date.now() < state.nextPruneAt) return;
  state.nextPruneAt = Date.now() + HOUR_MS;
  await sqlQuery(`DELETE FROM api_key_usage WHERE hour < now() - make_interval(days => $1)`, [
    USAGE_RETENTION_DAYS,
  ]).catch((error: unknown) => logger().warn({ ...errorFields(error) }, "expired API usage not deleted"));
}

export type DailyUsage = { day: string } & Record<UsageOutcome, number>;
export type KeyUsage = { last24Hours: number; days: DailyUsage[] };

/** Per key of a buyer: answers in the last 24 hours and per day (UTC) of the last `days` days, by outcome. */
export async function usageByKey(buyerId: string, days = 30, now = new Date()): Promise<Map<string, KeyUsage>> {
  const rows = await sqlQuery<{ key_id: string; day: string; outcome: UsageOutcome; count: number; recent: number }>(
    `SELECT u.key_id, to_char(date_trunc('day', u.hour AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, u.outcome::text AS outcome,
            sum(u.count)::int AS count,
            sum(u.count) FILTER (WHERE u.hour > $3::timestamptz - interval '24 hours')::int AS recent
     FROM api_key_usage u JOIN api_keys k ON k.id = u.key_id
     WHERE k.buyer_id = $1 AND u.hour >= date_trunc('day', $3::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - make_interval(days => $2 - 1)
     GROUP BY 1, 2, 3`,
    [buyerId, days, now],
  );
  const byKey = new Map<string, KeyUsage>();
  for (const row of rows) {
    let usage = byKey.get(row.key_id);
    if (!usage) {
      usage = { last24Hours: 0, days: emptyUsageDays(now, days) };
      byKey.set(row.key_id, usage);
    }
    usage.last24Hours += row.recent ?? 0;
    const day = usage.days.find((entry) => entry.day === row.day);
    if (day) day[row.outcome] += row.count;
  }
  return byKey;
}

/** The account's answers per day of the last `days` days, all keys together. */
export async function accountUsage(buyerId: string, days = 30, now = new Date()): Promise<KeyUsage> {
  const total: KeyUsage = { last24Hours: 0, days: emptyUsageDays(now, days) };
  for (const usage of (await usageByKey(buyerId, days, now)).values()) {
    total.last24Hours += usage.last24Hours;
    usage.days.forEach((day, index) => {
      for (const outcome of USAGE_OUTCOMES) total.days[index]![outcome] += day[outcome];
    });
  }
  return total;
}

/** The last `days` days (UTC), oldest first, with nothing counted. */
export function emptyUsageDays(now: Date, days = 30): DailyUsage[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: days }, (_, index) => ({
    day: new Date(today - (days - 1 - index) * 86_400_000).toISOString().slice(0, 10),
    "2xx": 0,
    "4xx": 0,
    "429": 0,
    "5xx": 0,
  }));
}
