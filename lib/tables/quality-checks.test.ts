import { describe, expect, it } from "vitest";
import { CHECK_DEFAULTS, type ColumnQuality } from "../schemas/quality";
import {
  checkSettings,
  parseCheckSetting,
  populationStabilityIndex,
  PSI_EMPTY_BIN,
  qualityOf,
  runChecks,
  type ReportInput,
} from "./quality-checks";

describe("populationStabilityIndex", () => {
  it("is 0 for the same distribution, whatever the totals", () => {
    expect(populationStabilityIndex([10, 20, 30, 0], [1, 2, 3, 0])).toBeCloseTo(0, 12);
  });

  it("is the textbook sum over bins of (a - e) ln(a / e)", () => {
    const expected = [50, 50];
    const actual = [80, 20];
    const value = (0.8 - 0.5) * Math.log(0.8 / 0.5) + (0.2 - 0.5) * Math.log(0.2 / 0.5);
    expect(populationStabilityIndex(expected, actual)).toBeCloseTo(value, 12);
  });

  it("smooths an empty bin with 0.0001 instead of dividing by zero", () => {
    const value = populationStabilityIndex([100, 0], [50, 50])!;
    const smoothed = (0.5 - 1) * Math.log(0.5 / 1) + (0.5 - PSI_EMPTY_BIN) * Math.log(0.5 / PSI_EMPTY_BIN);
    expect(value).toBeCloseTo(smoothed, 12);
    expect(Number.isFinite(value)).toBe(true);
  });

  it("counts nulls as a bin: a column turning null shifts", () => {
    // bins: 3 value bins then the null bin
    expect(populationStabilityIndex([30, 30, 40, 0], [0, 0, 0, 100])!).toBeGreaterThan(5);
  });

  it("is null when one side has no rows, and refuses bins that do not match", () => {
    expect(populationStabilityIndex([0, 0], [1, 2])).toBeNull();
    expect(populationStabilityIndex([1, 2], [0, 0])).toBeNull();
    expect(() => populationStabilityIndex([1], [1, 2])).toThrow(/same bins/);
  });
});

describe("checkSettings and parseCheckSetting", () => {
  it("lays a table's overrides over the defaults, ignoring unknown names", () => {
    const settings = checkSettings({ distinct_drop: { threshold: 0.3, level: "hold" }, bogus: { threshold: 1 } });
    expect(settings.distinct_drop).toEqual({ threshold: 0.3, level: "hold" });
    expect(settings.row_count_drop).toEqual(CHECK_DEFAULTS.row_count_drop);
    expect(Object.keys(settings)).not.toContain("bogus");
    expect(checkSettings(null)).toEqual(CHECK_DEFAULTS);
  });

  it("parses name=threshold[:level], keeping the level when not given", () => {
    expect(parseCheckSetting("row_count_drop=0.5", CHECK_DEFAULTS)).toEqual({
      name: "row_count_drop",
      setting: { threshold: 0.5, level: "hold" },
    });
    expect(parseCheckSetting("distribution_shift=1:off", CHECK_DEFAULTS).setting).toEqual({
      threshold: 1,
      level: "off",
    });
  });

  it.each([
    ["row_count_drop=-1", /from 0 to 1/],
    ["row_count_drop=2", /from 0 to 1/],
    ["row_count_drop=NaN", /from 0 to 1/],
    ["row_count_drop=", /from 0 to 1/],
    ["row_count_drop=Infinity", /from 0 to 1/],
    ["nonsense=0.1", /no check named "nonsense"/],
    ["row_count_drop=0.1:loud", /hold, warn or off/],
    ["row_count_drop", /name=threshold/],
  ])("refuses %s", (text, message) => {
    expect(() => parseCheckSetting(text, CHECK_DEFAULTS)).toThrow(message);
  });
});

const column = (overrides: Partial<ColumnQuality>): ColumnQuality => ({
  name: "price",
  type: "DOUBLE",
  null_fraction: 0,
  previous_null_fraction: 0,
  distinct: 1000,
  previous_distinct: 1000,
  min: 1,
  max: 2,
  mean: 1.5,
  psi: 0,
  ...overrides,
});

const report = (overrides: Partial<ReportInput>): ReportInput => ({
  rows: 1000,
  previous_rows: 1000,
  changes: { inserted: 0, updated: 0, deleted: 0 },
  added_columns: [],
  columns: [column({})],
  append: false,
  ...overrides,
});

describe("runChecks", () => {
  const outcome = (input: ReportInput, name: string, settings = CHECK_DEFAULTS) =>
    runChecks(input, settings).find((check) => check.name === name)?.outcome;

  it.each([
    ["row_count_zero", report({ rows: 0, previous_rows: 10 }), report({ rows: 1 })],
    ["row_count_drop", report({ rows: 790 }), report({ rows: 800 })],
    ["deleted_fraction", report({ changes: { inserted: 0, updated: 0, deleted: 101 } }), report({})],
    ["null_fraction_increase", report({ columns: [column({ null_fraction: 0.21 })] }), report({})],
    [
      "distinct_drop",
      report({ columns: [column({ distinct: 499 })] }),
      report({ columns: [column({ distinct: 500 })] }),
    ],
    ["distribution_shift", report({ columns: [column({ psi: 0.26 })] }), report({ columns: [column({ psi: 0.25 })] })],
  ])("%s fails past its threshold at its default level, passes at it", (name, tripped, fine) => {
    const level = CHECK_DEFAULTS[name as keyof typeof CHECK_DEFAULTS].level;
    expect(outcome(tripped, name)).toBe(level === "hold" ? "held" : "warned");
    expect(outcome(fine, name)).toBe("passed");
  });

  it("follows the table's level: warn, hold, off", () => {
    const tripped = report({ rows: 500 });
    const with_ = (level: "hold" | "warn" | "off") => checkSettings({ row_count_drop: { threshold: 0.2, level } });
    expect(outcome(tripped, "row_count_drop", with_("warn"))).toBe("warned");
    expect(outcome(tripped, "row_count_drop", with_("hold"))).toBe("held");
    expect(outcome(tripped, "row_count_drop", with_("off"))).toBeUndefined();
  });

  it("skips what does not apply: previous 0 rows, append versions, no previous figures, few distinct values", () => {
    const names = (input: ReportInput) => runChecks(input, CHECK_DEFAULTS).map((check) => check.name);
    expect(names(report({ previous_rows: 0, rows: 5 }))).not.toContain("row_count_drop");
    expect(names(report({ previous_rows: 0, rows: 5 }))).not.toContain("deleted_fraction");
    expect(names(report({ append: true, rows: 0 }))).toEqual([
      "null_fraction_increase",
      "distinct_drop",
      "distribution_shift",
    ]);
    expect(
      names(report({ columns: [column({ previous_null_fraction: null, previous_distinct: null, psi: null })] })),
    ).toEqual(["row_count_zero", "row_count_drop", "deleted_fraction"]);
    expect(names(report({ columns: [column({ previous_distinct: 99, distinct: 1 })] }))).not.toContain("distinct_drop");
  });

  it("holds no column that was all null before and still is", () => {
    const allNull = column({ null_fraction: 1, previous_null_fraction: 1, distinct: 0, previous_distinct: 0, psi: 0 });
    expect(qualityOf(runChecks(report({ columns: [allNull] }), CHECK_DEFAULTS))).toEqual({
      held: false,
      quality: { status: "passed", reason: null, checks: [] },
    });
  });

  it("is held when a hold check fails, warned when only a warn check does; lists only the failed", () => {
    const warned = qualityOf(runChecks(report({ columns: [column({ psi: 3 })] }), CHECK_DEFAULTS));
    expect(warned.held).toBe(false);
    expect(warned.quality.status).toBe("warned");
    expect(warned.quality.checks.map((check) => check.name)).toEqual(["distribution_shift"]);
    const held = qualityOf(runChecks(report({ rows: 100, columns: [column({ psi: 3 })] }), CHECK_DEFAULTS));
    expect(held.held).toBe(true);
    expect(held.quality.checks.map((check) => check.outcome)).toEqual(["held", "warned"]);
  });
});
