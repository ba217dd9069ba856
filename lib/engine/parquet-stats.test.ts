import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { compareDecimals, parseDecimal } from "./decimal-text";
import { columnStatsFrom, columnStatsQuery, type ColumnStatsRow } from "./parquet-stats";

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

describe("columnStatsFrom: bounds never inside the real range", () => {
  const row = (name: string, min: string, max: string): ColumnStatsRow => ({
    name,
    nulls: "0",
    min_value: min,
    max_value: max,
    bounded: true,
  });
  const statsOf = (type: string, min: string, max: string) =>
    columnStatsFrom([{ name: "c", type }], [row("c", min, max)]);
  /** The bound as a reader of the JSON text sees it, compared exactly with the real value. */
  const reads = (value: unknown) => parseDecimal(JSON.stringify(value))!;
  const exact = (text: string) => parseDecimal(text)!;

  it.each([
    ["DECIMAL(38,20)", "0.99999999999999999999", "1.00000000000000000001"],
    ["DECIMAL(38,20)", "-1.00000000000000000001", "-0.99999999999999999999"],
    ["DECIMAL(38,0)", "-12345678901234567890123", "12345678901234567890123"],
    ["DECIMAL(18,3)", "123456789012345.001", "123456789012345.999"],
    ["BIGINT", "-9007199254740993", "9007199254740993"],
    ["UBIGINT", "10000000000000000001", "10000000000000000001"],
    ["DECIMAL(10,2)", "1.50", "9.25"],
  ])("%s from %s to %s: min at or below, max at or above, as JSON reads them", (type, min, max) => {
    const stats = statsOf(type, min, max);
    expect(compareDecimals(reads(stats.minValues.c), exact(min))).toBeLessThanOrEqual(0);
    expect(compareDecimals(reads(stats.maxValues.c), exact(max))).toBeGreaterThanOrEqual(0);
  });

  it("keeps bounds that are exact as they are", () => {
    expect(statsOf("DECIMAL(10,2)", "1.50", "9.25")).toMatchObject({ minValues: { c: 1.5 }, maxValues: { c: 9.25 } });
    expect(statsOf("BIGINT", "-5", "9007199254740991")).toMatchObject({
      minValues: { c: -5 },
      maxValues: { c: 9007199254740991 },
    });
    // 10^18 is a double JSON writes exactly: kept, though beyond 2^53.
    expect(statsOf("BIGINT", "0", "1000000000000000000").maxValues.c).toBe(1e18);
  });

  it.each([
    // Rounded up, the maximum has more digits than the type holds: a reader could not parse it.
    ["DECIMAL(18,0)", "1", "999999999999999999"],
    ["DECIMAL(38,20)", "0", "999999999999999999.99999999999999999999"],
    ["BIGINT", "0", "9223372036854775807"],
    ["BIGINT", "-9223372036854775808", "0"],
    ["UBIGINT", "0", "18446744073709551615"],
  ])("leaves %s out when a rounded bound leaves the type (%s to %s)", (type, min, max) => {
    const stats = statsOf(type, min, max);
    expect(stats.minValues).toEqual({});
    expect(stats.maxValues).toEqual({});
    expect(stats.nullCount).toEqual({ c: 0 });
  });
});

describe("timestamp bounds from a real footer", () => {
  it("rounds outward to the millisecond before 1970 and for nanoseconds (read by DuckDB as microseconds)", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "parquet-stats-"));
    const instance = await DuckDBInstance.create(":memory:");
    const connection = await instance.connect();
    try {
      const file = path.join(dir, "times.parquet");
      // Each column holds one value, so its minimum and maximum are that value.
      await connection.run(
        `COPY (SELECT TIMESTAMP '1969-12-31 23:59:59.9995' AS before_1970,
                      TIMESTAMP '2026-11-25 10:00:00.123456' AS micros,
                      TIMESTAMP_NS '2026-11-25 10:00:00.123000500' AS nanos,
                      TIMESTAMP_NS '1969-12-31 23:59:59.999999500' AS nanos_before_1970
              ) TO '${file}' (FORMAT parquet)`,
      );
      const columns = ["before_1970", "micros", "nanos", "nanos_before_1970"].map((name, index) => ({
        name,
        type: index < 2 ? "TIMESTAMP" : "TIMESTAMP_NS",
      }));
      const rows = (await connection.runAndReadAll(columnStatsQuery(file, columns)!)).getRowObjectsJson();
      const stats = columnStatsFrom(columns, rows as ColumnStatsRow[]);
      // The real values in nanoseconds since the epoch, against the bounds' milliseconds.
      const real: Record<string, bigint> = {
        before_1970: -500_000n,
        micros: 1795600800123456000n,
        nanos: 1795600800123000500n,
        nanos_before_1970: -500n,
      };
      for (const [name, ns] of Object.entries(real)) {
        const min = BigInt(Date.parse(String(stats.minValues[name]))) * 1_000_000n;
        const max = BigInt(Date.parse(String(stats.maxValues[name]))) * 1_000_000n;
        expect(min <= ns, `${name} min ${stats.minValues[name]}`).toBe(true);
        expect(max >= ns, `${name} max ${stats.maxValues[name]}`).toBe(true);
        expect(max - min, `${name} within a millisecond or two`).toBeLessThanOrEqual(2_000_000n);
      }
    } finally {
      connection.closeSync();
      instance.closeSync();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
