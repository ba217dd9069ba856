import { describe, expect, it } from "vitest";
import { freshnessWords } from "./freshness-words";

describe("freshnessWords", () => {
  const due = "2026-12-03T06:00:00.000Z";
  it.each([
    ["no cadence", null, { late: false, text: "No refresh cadence promised." }],
    [
      "a day, on time",
      { every: "P1D", grace: "PT6H", expected_by: due, late: false },
      { late: false, text: "Refreshed every day (grace 6 hours); next version expected by 2026-12-03 06:00 UTC." },
    ],
    [
      "two days and a half, no grace",
      { every: "P2DT12H", grace: "PT0S", expected_by: due, late: false },
      {
        late: false,
        text: "Refreshed every 2 days 12 hours (no grace); next version expected by 2026-12-03 06:00 UTC.",
      },
    ],
    [
      "an hour, before the first version",
      { every: "PT1H", grace: "PT15M", expected_by: null, late: false },
      { late: false, text: "Refreshed every hour (grace 15 minutes); the first version is not made yet." },
    ],
    [
      "a week, late",
      { every: "P7D", grace: "P1D", expected_by: due, late: true },
      {
        late: true,
        lead: "Late:",
        text: "the next version was expected by 2026-12-03 06:00 UTC and has not come yet. Refreshed every 7 days (grace 1 day).",
      },
    ],
  ])("%s", (_, freshness, words) => {
    expect(freshnessWords(freshness)).toEqual(words);
  });
});
