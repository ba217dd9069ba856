import { describe, expect, it } from "vitest";
import { columnStatsQuery } from "./parquet-stats";

describe("columnStatsQuery", () => {
  it("reads the footer once whatever the number of columns (one parquet_metadata() call)", () => {
    const types = ["BIGINT", "DECIMAL(38,20)", "VARCHAR", "DATE", "TIMESTAMP", "BOOLEAN"];
    const columns = Array.from({ length: 2000 }, (_, index) => ({ name: `c${index}`, type: types[index % 6]! }));
    const query = columnStatsQuery("/data/wide.parquet", columns)!;
    expect(query.match(/parquet_metadata\(/g)).toHaveLength(1);
    // One grouped scan per type, not one per column.
    expect(query.match(/GROUP BY path_in_schema/g)).toHaveLength(types.length);
    for (const name of ["c0", "c1999", "c1000"]) expect(query).toContain(`'${name}'`);
  });

  it("answers nothing to read for columns without statistics", () => {
    expect(columnStatsQuery("/data/nested.parquet", [{ name: "s", type: "STRUCT(a INTEGER)" }])).toBeNull();
  });
});
