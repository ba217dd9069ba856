import { describe, expect, it } from "vitest";
import { QUALITY_BEFORE_CHECKS, type QualityReport } from "../schemas/quality";
import { readQuality, readReport } from "./quality-views";

const REPORT: QualityReport = {
  rows: 600,
  previous_rows: 1000,
  changes: { inserted: 0, updated: 0, deleted: 400 },
  added_columns: [],
  columns: [],
  checks: [{ name: "row_count_drop", column: null, value: 0.4, threshold: 0.2, level: "hold", outcome: "held" }],
};

describe("a version's stored quality as the dashboard reads it", () => {
  it.each([
    ["NULL (made before the checks)", null, QUALITY_BEFORE_CHECKS],
    ["not in the Quality shape", { status: "unheard-of" }, QUALITY_BEFORE_CHECKS],
    [
      "released, with its reason and checks",
      { status: "released", reason: "Site redesign", checks: REPORT.checks },
      { status: "released", reason: "Site redesign", checks: REPORT.checks },
    ],
  ])("%s", (_, stored, read) => {
    expect(readQuality(stored)).toEqual(read);
  });

  it.each([
    ["NULL", null, null],
    ["a report missing its checks", { ...REPORT, checks: undefined }, null],
    ["a whole report", REPORT, REPORT],
  ])("a publication's report: %s", (_, stored, read) => {
    expect(readReport(stored)).toEqual(read);
  });
});
