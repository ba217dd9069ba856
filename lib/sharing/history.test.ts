import { describe, expect, it } from "vitest";
import { AppError } from "../errors";
import type { SharedVersion } from "./catalog";
import { parseTimestamp, versionAsOf, versionAtOrAfter } from "./history";

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return (error as Error).message;
  }
  throw new Error("not refused");
};

describe("parseTimestamp", () => {
  it.each([
    ["2026-02-30T00:00:00Z", /February 2026 has 28 days/],
    ["2026-02-29T00:00:00Z", /February 2026 has 28 days/],
    ["2026-04-31T00:00:00Z", /April 2026 has 30 days/],
    ["2026-13-01T00:00:00Z", /no month 13/],
    ["2026-00-10T00:00:00Z", /no month 0/],
    ["2026-01-00T00:00:00Z", /January 2026 has 31 days/],
    ["2026-01-01T24:00:00Z", /time of day/],
    ["2026-01-01T10:60:00Z", /time of day/],
    ["2026-01-01T10:00:60Z", /time of day/],
    ["2026-01-01T10:00:00+24:00", /zone offset/],
    ["2026-01-01T10:00:00", /ISO 8601 with a zone/],
  ])("refuses %s with a sentence that says why", (text, why) => {
    const message = refusal(() => parseTimestamp("startingTimestamp", text));
    expect(message).toMatch(/^startingTimestamp must be a timestamp in ISO 8601/);
    expect(message).toMatch(why);
  });

  it.each([
    ["2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000Z"],
    ["2000-02-29T12:30Z", "2000-02-29T12:30:00.000Z"],
    ["2026-11-25T10:00:00.5+01:30", "2026-11-25T08:30:00.500Z"],
    ["2026-11-25T10:00:00-0200", "2026-11-25T12:00:00.000Z"],
    ["2026-12-31T23:59:59.999999999Z", "2026-12-31T23:59:59.999Z"],
  ])("reads %s as %s", (text, iso) => {
    expect(parseTimestamp("timestamp", text).toISOString()).toBe(iso);
  });

  it("rounds an instant finer than a millisecond down, or up when asked", () => {
    expect(parseTimestamp("timestamp", "2026-11-25T10:00:00.123456Z").toISOString()).toBe("2026-11-25T10:00:00.123Z");
    expect(parseTimestamp("t", "2026-11-25T10:00:00.123456Z", "up").toISOString()).toBe("2026-11-25T10:00:00.124Z");
    expect(parseTimestamp("t", "2026-11-25T10:00:00.123000Z", "up").toISOString()).toBe("2026-11-25T10:00:00.123Z");
    expect(parseTimestamp("t", "2026-12-31T23:59:59.9995Z", "up").toISOString()).toBe("2027-01-01T00:00:00.000Z");
  });
});

describe("time travel at a finer instant than a version's millisecond", () => {
  // Versions are kept to the millisecond (created_at is TIMESTAMPTZ(3)).
  const versions: SharedVersion[] = [
    { version: 1, createdAt: new Date("2026-11-25T10:00:00.123Z"), pruned: false },
    { version: 2, createdAt: new Date("2026-11-25T10:00:00.124Z"), pruned: false },
  ];
  it("answers startingTimestamp .123456 with the first version made at or after it (2, made at .124)", () => {
    const at = parseTimestamp("startingTimestamp", "2026-11-25T10:00:00.123456Z", "up");
    expect(versionAtOrAfter(versions, at).version).toBe(2);
    expect(versionAtOrAfter(versions, parseTimestamp("s", "2026-11-25T10:00:00.123Z", "up")).version).toBe(1);
  });
  it("answers timestamp .123999 with the last version made at or before it (1, made at .123)", () => {
    expect(versionAsOf(versions, parseTimestamp("timestamp", "2026-11-25T10:00:00.123999Z")).version).toBe(1);
    expect(versionAsOf(versions, parseTimestamp("timestamp", "2026-11-25T10:00:00.124Z")).version).toBe(2);
  });
});
