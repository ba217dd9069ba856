import { describe, expect, it } from "vitest";
import { baseTableName, TABLE_NAME_PATTERN, tableNameFor, tableNameProblem } from "./names";

describe("a file's table name", () => {
  it.each([
    ["products.csv", "products"],
    ["Products.2026-11.csv.gz", "products"],
    ["2026 Sales.CSV", "t_2026_sales"],
    ["ümlaut-Daten.tsv", "t__mlaut_daten"],
    [".hidden.jsonl", "t_"],
    ["_private.csv", "t__private"],
    ["a-b c.parquet", "a_b_c"],
    [`${"x".repeat(70)}.csv`, "x".repeat(63)],
  ])("%s gives %s", (fileName, table) => {
    expect(baseTableName(fileName)).toBe(table);
    expect(table).toMatch(TABLE_NAME_PATTERN);
  });

  it("adds _2, _3 ... where taken, cutting the name to make room", () => {
    const taken = new Set(["products", "products_2", "x".repeat(63), `${"x".repeat(61)}_2`]);
    expect(tableNameFor("products.csv", (name) => taken.has(name))).toBe("products_3");
    expect(tableNameFor(`${"x".repeat(80)}.csv`, (name) => taken.has(name))).toBe(`${"x".repeat(61)}_3`);
  });
});

describe("a table name given by the operator", () => {
  it.each(["products", "p", "a_1", "x".repeat(63)])("%s is accepted", (name) => {
    expect(tableNameProblem(name)).toBeUndefined();
  });
  it.each(["Products", "1products", "_p", "", "p-1", "x".repeat(64), "p\u0000"])("%j is refused", (name) => {
    expect(tableNameProblem(name)).toMatch(/lower-case letter/);
  });
});
