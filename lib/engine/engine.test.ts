import { describe, expect, it } from "vitest";
import { duckdbMessageFor } from "./engine";

describe("DuckDB's message for a buyer", () => {
  it("keeps the first paragraph, hides server paths, one line without control characters", () => {
    const error = new Error(
      'Conversion Error: CSV Error on Line: 3\nOriginal Line: "/tmp/dataset-access/work-1/source" a\u0000b\n\nPossible Solution: set ignore_errors',
    );
    expect(
      duckdbMessageFor(error, "products.csv", ["/tmp/dataset-access/work-1/source", "/tmp/dataset-access/work-1"]),
    ).toBe('CSV Error on Line: 3 Original Line: "products.csv" a\ufffdb');
  });

  it("cuts a long message at 500 characters", () => {
    expect(duckdbMessageFor(new Error(`Invalid Input Error: ${"x".repeat(2000)}`), "f.csv", [])).toHaveLength(501);
  });
});
