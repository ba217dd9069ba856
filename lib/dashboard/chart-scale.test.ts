import { describe, expect, it } from "vitest";
import { sharedScale } from "./chart-scale";

const point = (rows: number, inserted: number, updated = 0, deleted = 0) => ({ rows, inserted, updated, deleted });

describe("sharedScale", () => {
  it.each([
    ["a first load: rows and inserts alike", [point(40, 40), point(41, 1, 2, 1)], true],
    ["rows up to five times the tallest bar", [point(1000, 1000), point(650, 50, 120)], true],
    ["no changes at all", [point(500, 0)], true],
    ["rows dwarf the changes", [point(1_000_000, 20, 50, 10), point(1_000_010, 10)], false],
    ["just past five times", [point(501, 100)], false],
  ])("%s", (_, points, expected) => {
    expect(sharedScale(points)).toBe(expected);
  });
});
