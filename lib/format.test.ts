import { describe, expect, it } from "vitest";
import { formatBytes, formatDate, formatDay, formatSeconds } from "./format";

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [999, "999 B"],
    [1000, "1.0 KB"],
    [48_213, "48 KB"],
    [1_073_741_824, "1.1 GB"],
  ])("%d -> %s", (bytes, text) => expect(formatBytes(bytes)).toBe(text));
});

describe("dates", () => {
  it("are UTC, to the minute or the day", () => {
    expect(formatDate("2026-11-22T23:59:30.000Z")).toBe("2026-11-22 23:59 UTC");
    expect(formatDate(null, "Never")).toBe("Never");
    expect(formatDay(new Date("2027-02-20T05:11:00Z"))).toBe("2027-02-20");
  });
});

describe("formatSeconds", () => {
  it.each([
    [1, "1 second"],
    [0, "0 seconds"],
    [30, "30 seconds"],
  ])("%d reads %s", (seconds, text) => {
    expect(formatSeconds(seconds)).toBe(text);
  });
});
