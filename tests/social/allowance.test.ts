import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enableSocialAccess } from "../../lib/social/admin";
import { allowancePeriod, allowanceUsage, consumeAllowance, dailyReadsThisPeriod } from "../../lib/social/access";
import { readSocialProfile } from "../../lib/social/profiles";
import { db } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("social_allowance");
});
afterAll(async () => {
  await env?.cleanup();
});

describe("allowancePeriod", () => {
  it.each([
    ["2026-11-30T23:59:59.999Z", "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z"],
    ["2026-12-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["2028-02-29T12:00:00.000Z", "2028-02-01T00:00:00.000Z", "2028-03-01T00:00:00.000Z"],
  ])("%s is in [%s, %s)", (now, start, end) => {
    const period = allowancePeriod(new Date(now));
    expect([period.start.toISOString(), period.end.toISOString()]).toEqual([start, end]);
  });
});

describe("the monthly allowance, with an injected clock (real PostgreSQL)", () => {
  it("is used up in one month and starts afresh at the next, to the millisecond", async () => {
    const account = await buyer("rollover");
    const lastMoment = new Date("2026-11-30T23:59:59.999Z");
    const nextMonth = new Date("2026-12-01T00:00:00.000Z");
    expect((await consumeAllowance(account.id, 2, lastMoment))?.remaining).toBe(1);
    expect((await consumeAllowance(account.id, 2, lastMoment))?.remaining).toBe(0);
    expect(await consumeAllowance(account.id, 2, lastMoment)).toBeUndefined();

    const december = await consumeAllowance(account.id, 2, nextMonth);
    expect(december).toEqual({ allowance: 2, used: 1, remaining: 1, resetAt: new Date("2027-01-01T00:00:00.000Z") });
    expect((await allowanceUsage(account.id, 2, lastMoment)).used).toBe(2);
    const rows = await db().socialUsage.findMany({ where: { buyerId: account.id }, orderBy: { periodStart: "asc" } });
    expect(rows.map((row) => [row.periodStart.toISOString().slice(0, 10), row.used])).toEqual([
      ["2026-11-01", 2],
      ["2026-12-01", 1],
    ]);
  });

  it("counts each read taken on its day (UTC), and none that was refused", async () => {
    const account = await buyer("daily-reads");
    const read = (at: string) => consumeAllowance(account.id, 3, new Date(at));
    await read("2026-11-02T23:59:59.999Z");
    await read("2026-11-03T00:00:00.000Z");
    await read("2026-11-03T10:00:00.000Z");
    expect(await read("2026-11-03T11:00:00.000Z")).toBeUndefined(); // the allowance of 3 is used up
    const days = await dailyReadsThisPeriod(account.id, new Date("2026-11-04T08:00:00.000Z"));
    expect(days).toEqual([
      { day: "2026-11-01", reads: 0 },
      { day: "2026-11-02", reads: 1 },
      { day: "2026-11-03", reads: 2 },
      { day: "2026-11-04", reads: 0 },
    ]);
    // December's chart starts empty.
    expect(await dailyReadsThisPeriod(account.id, new Date("2026-12-01T00:00:00.000Z"))).toEqual([
      { day: "2026-12-01", reads: 0 },
    ]);
  });

  it("answers an exhausted read with Retry-After up to the month's end", async () => {
    const account = await buyer("retry-after");
    await enableSocialAccess(account.id, 1, 10);
    await db().socialProfile.create({
      data: { platform: "x", handle: "nasa", profile: { name: "NASA" }, fetchedAt: new Date() },
    });
    const now = new Date("2027-01-31T23:59:00.000Z");
    const read = { buyerId: account.id, allowance: 1, platform: "x" as const, handle: "NASA", now };
    expect((await readSocialProfile(read)).allowance.remaining).toBe(0);
    await expect(readSocialProfile(read)).rejects.toMatchObject({
      code: "social_allowance_exhausted",
      headers: {
        "Retry-After": "60",
        "Social-Allowance-Remaining": "0",
        "Social-Allowance-Reset": "2027-02-01T00:00:00.000Z",
      },
    });
    // A minute later it is February: allowed again.
    expect((await readSocialProfile({ ...read, now: new Date("2027-02-01T00:00:00.000Z") })).allowance.used).toBe(1);
  });
});
