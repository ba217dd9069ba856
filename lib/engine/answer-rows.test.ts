import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../errors";
import { answerRows } from "./answer-rows";

let instance: DuckDBInstance;
let connection: DuckDBConnection;

beforeAll(async () => {
  instance = await DuckDBInstance.create(":memory:");
  connection = await instance.connect();
});
afterAll(() => {
  connection.closeSync();
  instance.closeSync();
});

const read = async (sql: string, budget: Parameters<typeof answerRows>[1]) =>
  answerRows(await connection.stream(sql), budget);

describe("answerRows", () => {
  it("answers every row within the limit and the budget, uncut", async () => {
    const answer = await read("SELECT range AS n, 'x' || range AS s FROM range(3)", { limit: 10, bytes: 10_000 });
    expect(answer).toEqual({
      columns: [
        { name: "n", type: "BIGINT" },
        { name: "s", type: "VARCHAR" },
      ],
      rowsJson: '[[0,"x0"],[1,"x1"],[2,"x2"]]',
      rowCount: 3,
    });
  });

  it("cuts at the limit, across DuckDB's chunks of 2,048 rows", async () => {
    const answer = await read("SELECT range FROM range(5000)", { limit: 4_500, bytes: 1024 * 1024 });
    expect(answer).toMatchObject({ rowCount: 4_500, cut: "rows" });
    expect((JSON.parse(answer.rowsJson) as number[][]).at(-1)).toEqual([4_499]);
  });

  it("cuts at the byte budget, the whole answer within it, and converts nothing past it", async () => {
    const bytes = 64 * 1024;
    const answer = await read("SELECT repeat('x', 1000) AS a, repeat('y', 1000) AS b FROM range(1000)", {
      limit: 1000,
      bytes,
    });
    expect(answer.cut).toBe("bytes");
    expect(answer.rowCount).toBeGreaterThan(20);
    expect(answer.rowCount).toBeLessThan(33);
    const whole = JSON.stringify({ columns: answer.columns, rows: JSON.parse(answer.rowsJson), truncated: true });
    expect(Buffer.byteLength(whole)).toBeLessThanOrEqual(bytes);
  });

  it("refuses one row over the budget as answer_too_large, naming the widest columns", async () => {
    const refusal = await read("SELECT 1 AS narrow, repeat('w', 1000) AS wide, repeat('m', 500) AS middle", {
      limit: 10,
      bytes: 1_200,
    }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect((refusal as AppError).code).toBe("answer_too_large");
    expect((refusal as AppError).message).toMatch(/the widest: "wide" \(.*\), "middle" \(.*\), "narrow"/);
  });
});
