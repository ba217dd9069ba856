import { describe, expect, it } from "vitest";
import {
  PREVIEW_CELL_MAX_CHARS,
  PREVIEW_MAX_BYTES,
  PREVIEW_TEXT_LIMIT,
  previewValue,
  withinPreviewSize,
  withoutNul,
} from "./preview-values";

describe("preview values", () => {
  it.each([
    ["1", "BIGINT", 1],
    ["-9007199254740991", "BIGINT", -9007199254740991],
    ["9007199254740993", "BIGINT", "9007199254740993"],
    ["170141183460469231731687303715884105727", "HUGEINT", "170141183460469231731687303715884105727"],
    ["1.25", "DECIMAL(10,2)", "1.25"],
    ["1.50", "DECIMAL(9,2)", "1.50"],
    ["-0.050", "DECIMAL(4,3)", "-0.050"],
    ["12345678901234567.89", "DECIMAL(20,2)", "12345678901234567.89"],
    ["2024-01-02 03:04:05.123", "TIMESTAMP", "2024-01-02T03:04:05.123"],
    ["2024-01-02 03:04:05", "TIMESTAMP_S", "2024-01-02T03:04:05"],
    ["2024-01-02 01:04:05+00", "TIMESTAMP WITH TIME ZONE", "2024-01-02T01:04:05Z"],
    ["infinity", "TIMESTAMP", "infinity"],
    ["2024-01-02", "DATE", "2024-01-02"],
    [null, "BIGINT", null],
    [true, "BOOLEAN", true],
    ["NaN", "DOUBLE", "NaN"],
  ] as const)("%s of %s is %j", (value, type, expected) => {
    expect(previewValue(value, type)).toEqual(expected);
  });

  it("cuts long text, marking the cut", () => {
    const value = previewValue("x".repeat(PREVIEW_TEXT_LIMIT + 5), "VARCHAR") as string;
    expect(value).toHaveLength(PREVIEW_TEXT_LIMIT + 1);
    expect(value.endsWith("…")).toBe(true);
  });
});

describe("nested values", () => {
  it("cut their text at any depth, keeping the keys", () => {
    const long = "x".repeat(200_000);
    const value = previewValue({ s: { deeper: [long] }, t: long }, "STRUCT(...)") as {
      s: { deeper: string[] };
      t: string;
    };
    expect(value.s.deeper[0]).toHaveLength(PREVIEW_TEXT_LIMIT + 1);
    expect(value.t).toHaveLength(PREVIEW_TEXT_LIMIT + 1);
  });

  it("beyond PREVIEW_CELL_MAX_CHARS of JSON are shown as their JSON text, cut", () => {
    const many = Array.from({ length: 10_000 }, (_, i) => `item ${i}`);
    const value = previewValue(many, "VARCHAR[]");
    expect(typeof value).toBe("string");
    expect((value as string).startsWith('["item 0","item 1"')).toBe(true);
    expect((value as string).length).toBeLessThanOrEqual(PREVIEW_CELL_MAX_CHARS);
    expect(previewValue(["a", "b"], "VARCHAR[]")).toEqual(["a", "b"]);
  });
});

describe("NUL characters", () => {
  it("become the text \\u0000 in strings and keys at any depth, so PostgreSQL can store them", () => {
    expect(withoutNul(["x\u0000y", { "k\u0000": ["\u0000"] }, 1, null])).toEqual([
      "x\\u0000y",
      { "k\\u0000": ["\\u0000"] },
      1,
      null,
    ]);
  });
});

describe("the preview's size", () => {
  it("keeps rows up to PREVIEW_MAX_BYTES of JSON, and always the first", () => {
    const wide = Array.from({ length: 100 }, () => ["x".repeat(50_000)]);
    const kept = withinPreviewSize(wide);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(100);
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(PREVIEW_MAX_BYTES);
    expect(withinPreviewSize([["x".repeat(2 * PREVIEW_MAX_BYTES)]])).toHaveLength(1);
    expect(withinPreviewSize([[1], [2]])).toEqual([[1], [2]]);
  });
});
