import { describe, expect, it } from "vitest";
import { durationWords, isoDuration, parseDuration } from "./durations";

describe("parseDuration", () => {
  it.each([
    ["1h", 3600],
    ["6h", 21600],
    ["1d", 86400],
    ["1d12h", 129600],
    ["90d", 7776000],
    ["2w", 1209600],
    ["45m", 2700],
    [" 1D ", 86400],
    ["P1D", 86400],
    ["PT6H", 21600],
    ["P22DT12H", 1944000],
    ["pt15m", 900],
  ])("reads %j as %d seconds", (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(["", "1", "h", "1.5h", "-1h", "1h1d", "P", "PT", "P1DT", "P1M", "P1Y", "1 day", "1hh", "tomorrow"])(
    "refuses %j",
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );
});

describe("isoDuration", () => {
  it.each([
    [86400, "P1D"],
    [21600, "PT6H"],
    [1944000, "P22DT12H"],
    [900, "PT15M"],
    [3661, "PT1H1M1S"],
    [0, "PT0S"],
    [7776000, "P90D"],
  ])("writes %d seconds as %s, which reads back", (seconds, iso) => {
    expect(isoDuration(seconds)).toBe(iso);
    expect(parseDuration(iso)).toBe(seconds);
  });

  it("says a duration in words", () => {
    expect(durationWords(86400)).toBe("1 day");
    expect(durationWords(21600)).toBe("6 hours");
    expect(durationWords(1944000)).toBe("22 days 12 hours");
  });
});
