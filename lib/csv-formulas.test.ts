import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { formulaSafe, formulaSafeSql } from "./csv-formulas";

const CASES: [string, string][] = [
  ["=1+1", "'=1+1"],
  ["+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"],
  ["-2+3", "'-2+3"],
  ["@SUM(A1:A2)", "'@SUM(A1:A2)"],
  ["\t=1", "'\t=1"],
  ["\r=1", "'\r=1"],
  ["-12.5", "-12.5"],
  ["+3", "+3"],
  ["-1e5", "-1e5"],
  [".5", ".5"],
  ["plain", "plain"],
  ["a=1", "a=1"],
  ["", ""],
];

describe("spreadsheet formulas in CSV", () => {
  it.each(CASES)("%j is written as %j", (value, expected) => {
    expect(formulaSafe(value)).toBe(expected);
  });

  it("gives the same answer in DuckDB's SQL as in TypeScript", async () => {
    const connection = await (await DuckDBInstance.create(":memory:")).connect();
    try {
      const values = CASES.map(
        ([value]) => `(${CASES.findIndex(([v]) => v === value)}, '${value.replaceAll("'", "''")}')`,
      );
      const result = await connection.runAndReadAll(
        `SELECT ${formulaSafeSql("v")} FROM (VALUES ${values.join(", ")}) t(i, v) ORDER BY i`,
      );
      expect(result.getRowsJson().map(([value]) => value)).toEqual(CASES.map(([, expected]) => expected));
    } finally {
      connection.closeSync();
    }
  });
});
