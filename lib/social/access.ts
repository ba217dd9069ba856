import { db, Prisma } from "../db/client";

/** Per-account Social API settings, set by the operator (social:enable / social:disable). */
export type SocialAccessSettings = { enabled: boolean; monthlyAllowance: number; ratePerMinute: number };

export async function socialAccessFor(buyerId: string): Promise<SocialAccessSettings | undefined> {
  const access = await db().socialAccess.findUnique({
    where: { buyerId },
    select: { enabled: true, monthlyAllowance: true, ratePerMinute: true },
  });
  return access ?? undefined;
}

/** Whether the operator has enabled Social API access for the account (scrape:read keys need it). */
export async function socialAccessEnabled(buyerId: string): Promise<boolean> {
  return (await socialAccessFor(buyerId))?.enabled ?? false;
}

/** The allowance period: the calendar month (UTC) that contains `now`. */
export function allowancePeriod(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

export type AllowanceState = { allowance: number; used: number; remaining: number; resetAt: Date };

function state(allowance: number, used: number, now: Date): AllowanceState {
  return { allowance, used, remaining: Math.max(0, allowance - used), resetAt: allowancePeriod(now).end };
}

/**
 * Takes one read from this month's allowance, atomically: the row is incremented only while it is
 * below the allowance, in one statement, so concurrent requests can neither lose an update nor
 * overshoot; the same statement counts the read on its day. Returns undefined when the allowance
 * is used up.
 */
export async function consumeAllowance(
  buyerId: string,
  allowance: number,
  now = new Date(),
): Promise<AllowanceState | undefined> {
  // As a 'YYYY-MM-DD' string: a timestamp would be turned into a date in the session's time zone.
  const periodStart = allowancePeriod(now).start.toISOString().slice(0, 10);
  const day = now.toISOString().slice(0, 10);
  const rows = await db().$queryRaw<{ used: number }[]>(Prisma.sql`
    WITH taken AS (
      INSERT INTO social_usage (buyer_id, period_start, used)
      SELECT ${buyerId}, ${periodStart}::date, 1 WHERE ${allowance}::int >= 1
      ON CONFLICT (buyer_id, period_start) DO UPDATE SET used = social_usage.used + 1
        WHERE social_usage.used < ${allowance}::int
      RETURNING used
    ), counted AS (
      INSERT INTO social_usage_daily (buyer_id, day, used)
      SELECT ${buyerId}, ${day}::date, 1 FROM taken
      ON CONFLICT (buyer_id, day) DO UPDATE SET used = social_usage_daily.used + 1
    )
    SELECT used FROM taken`);
  const used = rows[0]?.used;
  return used === undefined ? undefined : state(allowance, used, now);
}

/** This month's use of the allowance, without taking any. */
export async function allowanceUsage(buyerId: string, allowance: number, now = new Date()): Promise<AllowanceState> {
  const usage = await db().socialUsage.findUnique({
    where: { buyerId_periodStart: { buyerId, periodStart: allowancePeriod(now).start } },
    select: { used: true },
  });
  return state(allowance, usage?.used ?? 0, now);
}

/** Profile reads per day of this allowance period (the calendar month, UTC) up to today, oldest first. */
export async function dailyReadsThisPeriod(
  buyerId: string,
  now = new Date(),
): Promise<{ day: string; reads: number }[]> {
  const { start } = allowancePeriod(now);
  const rows = await db().socialUsageDaily.findMany({
    where: { buyerId, day: { gte: start, lte: now } },
    select: { day: true, used: true },
  });
  const byDay = new Map(rows.map((row) => [row.day.toISOString().slice(0, 10), row.used]));
  const days: { day: string; reads: number }[] = [];
  for (let at = start.getTime(); at <= now.getTime(); at += 86_400_000) {
    const day = new Date(at).toISOString().slice(0, 10);
    days.push({ day, reads: byDay.get(day) ?? 0 });
  }
  return days;
}
