import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../errors";
import { sqlString } from "./engine";
import { refusedScan } from "./plan-check";
import { QUERY_TASKS, type SqlView } from "./query-tasks";
import { openTaskEngine } from "./task-engine";

/**
 * What a query may read, decided on DuckDB's bound plan (contract Part 8): orderSql run in an
 * instance locked as the engine locks a buyer's (an in-process DuckDB here), over views of two
 * parts and a change file. DuckDB's catalog however it is reached is refused, naming it, and no
 * answer shows a path or a setting.
 */

let directory: string;
let views: SqlView[];

beforeAll(async () => {
  directory = await fs.mkdtemp(path.join(os.tmpdir(), "plan-check-"));
  const file = (name: string) => ({ path: path.join(directory, name), name });
  const [partA, partB, change] = [file("a.parquet"), file("b.parquet"), file("change.parquet")];
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  await connection.run(`COPY (SELECT range AS id, 'a' AS part FROM range(3)) TO ${sqlString(partA.path)}`);
  await connection.run(`COPY (SELECT range + 3 AS id, 'b' AS part FROM range(2)) TO ${sqlString(partB.path)}`);
  await connection.run(`COPY (SELECT 1 AS id, 'insert' AS _change_type) TO ${sqlString(change.path)}`);
  connection.closeSync();
  instance.closeSync();
  const columns = [
    { name: "id", type: "BIGINT" },
    { name: "part", type: "VARCHAR" },
  ];
  views = [
    { name: "products", files: [partA, partB], columns },
    { name: "products@changes", files: [], columns: [], changes: [{ version: 1, file: change, columns }] },
  ];
});
afterAll(async () => {
  await fs.rm(directory, { recursive: true, force: true });
});

/** orderSql's answer to `sql`, or its refusal, in a new locked instance reading the views' files. */
async function orderSql(sql: string) {
  const readable = views.flatMap((view) => [...view.files, ...(view.changes ?? []).map(({ file }) => file)]);
  const scope = { directory: path.join(directory, "task"), readable: readable.map((file) => file.path) };
  const engine = await openTaskEngine(scope as Parameters<typeof openTaskEngine>[0]);
  try {
    const answer = await QUERY_TASKS.orderSql(engine.connection, { sql, views, limit: 100, bytes: 1024 * 1024 });
    return "rowsJson" in answer ? { ...answer, rows: JSON.parse(answer.rowsJson) as unknown[][] } : answer;
  } finally {
    engine.close();
    await fs.rm(scope.directory, { recursive: true, force: true });
  }
}

const CTE_TRICK = (name: string) =>
  `SELECT * FROM (WITH ${name} AS (SELECT 1) SELECT 1) t, ${name}, (SELECT 1 FROM products LIMIT 1) p`;

describe("a query's plan", () => {
  it.each([
    ["SELECT count(*) FROM products", [[5]]],
    [`SELECT count(*) FROM products, "products@changes" c WHERE c.id = products.id`, [[1]]],
    ["WITH p AS (SELECT id FROM products WHERE part = 'b') SELECT max(id) FROM p", [[4]]],
    ["WITH products AS (SELECT 42 AS n) SELECT n FROM products", [[42]]],
    ["SELECT count(*) FROM range(10)", [[10]]],
    ["SELECT count(*) FROM generate_series(1, 3)", [[3]]],
    ["SELECT sum(x) FROM unnest([1, 2, 3]) t(x)", [[6]]],
    ["SELECT unnest([1, 2])", [[1], [2]]],
    ["SELECT * FROM (PIVOT (SELECT part FROM products) ON part IN ('a', 'b') USING count(*))", [[3, 2]]],
  ])("%s runs", async (sql, rows) => {
    expect(await orderSql(sql)).toMatchObject({ rows });
  });

  it.each([
    [CTE_TRICK("pg_settings"), /"pg_settings" is not a table of this order but DuckDB's catalog \(duckdb_settings\)/],
    [CTE_TRICK("duckdb_views"), /"duckdb_views" is not a table of this order but DuckDB's catalog \(duckdb_views\)/],
    [CTE_TRICK("sqlite_master"), /"sqlite_master" is not a table .* \(duckdb_/],
    [CTE_TRICK("duckdb_tables"), /"duckdb_tables" is not a table .* \(duckdb_tables\)/],
    [`${CTE_TRICK("pg_settings")} WHERE name IN ('allowed_paths', 'temp_directory')`, /"pg_settings" is not/],
    ["SELECT get_block_size('memory')", /pragma_database_size\(\) is not a table of this order/],
    ["SELECT format_type(1, 1)", /duckdb_types\(\) is not a table of this order/],
  ])("%s is refused", async (sql, detail) => {
    const error = await orderSql(sql).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("invalid_sql");
    expect((error as AppError).message).toMatch(detail);
    expect((error as AppError).message).not.toContain(directory);
  });

  it("says a binding error as DuckDB does, the order's paths shown as their names", async () => {
    const error = await orderSql("SELECT nope FROM products").then(
      () => undefined,
      (thrown: unknown) => thrown as AppError,
    );
    expect(error?.code).toBe("invalid_sql");
    expect(error?.message).toMatch(/^[^:]*"nope" not found/);
    expect(error?.message).not.toContain(directory);
  });
});

describe("a plan's scans", () => {
  const planOf = async (sql: string) => {
    const instance = await DuckDBInstance.create(":memory:");
    const connection = await instance.connect();
    try {
      const plan = await connection.runAndReadAll("SELECT json_serialize_plan($1::VARCHAR)", [sql]);
      return String(plan.getRows()[0]![0]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  };

  it("reads a view's parts only as the view lists them, all of them", async () => {
    const [a, b] = views[0]!.files.map((file) => file.path);
    const plan = await planOf(`SELECT * FROM read_parquet([${sqlString(a!)}, ${sqlString(b!)}])`);
    expect(refusedScan(plan, [[a!, b!]])).toBeUndefined();
    expect(refusedScan(plan, [[a!]])).toBe("");
    expect(refusedScan(await planOf(`SELECT * FROM read_parquet(${sqlString(a!)})`), [[a!, b!]])).toBe("");
  });

  it("refuses a plan DuckDB cannot write out, and says a binding error as DuckDB does", () => {
    const unwritable = JSON.stringify({ error: true, error_type: "not implemented", error_message: "x" });
    expect(() => refusedScan(unwritable, [])).toThrow(/DuckDB cannot say what this query reads/);
    const unbound = JSON.stringify({ error: true, error_type: "binder", error_message: 'column "x" not found' });
    expect(() => refusedScan(unbound, [])).toThrow('column "x" not found');
  });
});
