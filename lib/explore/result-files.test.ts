import { describe, expect, it } from "vitest";
import { resultFile } from "./result-files";

const result = {
  columns: [
    { name: "id", type: "INTEGER" },
    { name: "name", type: "VARCHAR" },
    { name: "tags", type: "VARCHAR[]" },
  ],
  rows: [
    [1, "plain", ["a"]],
    [2, 'with "quotes", a comma\nand a line', null],
    [3, "=HYPERLINK(1)", []],
    [4, "-12.5", null],
  ],
  truncated: true,
};

describe("resultFile", () => {
  it("writes CSV with a header, quoting, empty nulls, JSON for nested values, formulas made text", () => {
    expect(resultFile(result, "csv")).toEqual({
      contentType: "text/csv; charset=utf-8",
      body:
        "id,name,tags\r\n" +
        '1,plain,"[""a""]"\r\n' +
        '2,"with ""quotes"", a comma\nand a line",\r\n' +
        "3,'=HYPERLINK(1),[]\r\n" +
        "4,-12.5,\r\n",
    });
  });

  it("writes JSON as one object per row, with the columns and whether it was cut", () => {
    const file = resultFile(result, "json");
    expect(file.contentType).toBe("application/json; charset=utf-8");
    expect(JSON.parse(file.body)).toEqual({
      columns: result.columns,
      rows: [
        { id: 1, name: "plain", tags: ["a"] },
        { id: 2, name: 'with "quotes", a comma\nand a line', tags: null },
        { id: 3, name: "=HYPERLINK(1)", tags: [] },
        { id: 4, name: "-12.5", tags: null },
      ],
      truncated: true,
    });
  });
});
