import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../errors";
import { parsedFilter } from "./query-tasks";
import { checkSelect } from "./sql-check";
import { lexFilter, parenthesisDepth, WHERE_MAX_CHARS } from "./where-filter";

/** The where-checker on DuckDB's own parse (an in-process DuckDB here: the app runs it in the engine process). */

const COLUMNS = ["id", "name", "price", "Sold At", "city"];
let instance: DuckDBInstance;
let connection: DuckDBConnection;

beforeAll(async () => {
  instance = await DuckDBInstance.create(":memory:");
  connection = await instance.connect();
});
afterAll(() => {
  connection?.closeSync();
  instance?.closeSync();
});

async function check(where: string): Promise<string> {
  lexFilter(where);
  return parsedFilter(where, COLUMNS);
}

async function refusal(where: string): Promise<{ code: string; message: string }> {
  const error = await check(where).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, where).toBeInstanceOf(AppError);
  return { code: (error as AppError).code, message: (error as AppError).message };
}

describe("allowed filters are rendered from the parse", () => {
  it.each([
    ["id = 1", '("id" = 1)'],
    // DuckDB reads 1_000 as 1000: the whole literal is rendered, never its first digit.
    ["id = 1_000 OR price > 1_0.2_5e1_0", '(("id" = 1000) OR ("price" > 10.25e10))'],
    ["price >= -1.50 AND price < 1e3", '(("price" >= -1.50) AND ("price" < 1e3))'],
    [`"Sold At" > TIMESTAMP '2026-01-01 00:00'`, `("Sold At" > CAST('2026-01-01 00:00' AS TIMESTAMP))`],
    ["NOT (city IS NULL) OR name IS NOT NULL", '((NOT ("city" IS NULL)) OR ("name" IS NOT NULL))'],
    ["city IN ('Paris', 'O''Brien')", `("city" IN ('Paris', 'O''Brien'))`],
    ["id NOT IN (1, 2)", '("id" NOT IN (1, 2))'],
    ["id NOT BETWEEN 1 AND 5", '(NOT ("id" BETWEEN 1 AND 5))'],
    ["lower(name) LIKE 'a%' AND name NOT ILIKE '%b'", `((lower("name") LIKE 'a%') AND ("name" NOT ILIKE '%b'))`],
    ["coalesce(price, 0) <> 0", '(coalesce("price", 0) <> 0)'],
    [
      "year(\"Sold At\") = 2026 AND date_trunc('month', \"Sold At\") = DATE '2026-01-01'",
      `((year("Sold At") = 2026) AND (date_trunc('month', "Sold At") = CAST('2026-01-01' AS DATE)))`,
    ],
    [
      "contains(name, 'x') AND starts_with(city, 'P') AND round(abs(price), 1) > length(trim(upper(name)))",
      `(contains("name", 'x') AND starts_with("city", 'P') AND (round(abs("price"), 1) > length(trim(upper("name")))))`,
    ],
    ["ID = 3 AND true", "((\"id\" = 3) AND CAST('t' AS BOOLEAN))"],
    // A column alone may be a condition (a BOOLEAN one); its type is DuckDB's to check.
    ["NOT city AND coalesce(name, false)", '((NOT "city") AND coalesce("name", CAST(\'f\' AS BOOLEAN)))'],
    ["price = NULL", '("price" = NULL)'],
    ["name = 'a;b -- /* c */'", `("name" = 'a;b -- /* c */')`],
  ])("%s", async (where, sql) => {
    expect(await check(where)).toBe(sql);
  });
});

describe("refused filters name the first offending token", () => {
  it.each([
    ["id = (SELECT 1)", "invalid_filter", /"SELECT" at character 7: a subquery/],
    ["city IN ( SELECT 'x')", "invalid_filter", /"SELECT" at character 11: a subquery/],
    ["CAST(id AS VARCHAR) = '1'", "invalid_filter", /"CAST" at character 1: a cast is not allowed/],
    ["TRY_CAST(id AS INTEGER) = 1", "invalid_filter", /"TRY_CAST" at character 1: a cast/],
    ["id::VARCHAR = '1'", "invalid_filter", /"::" at character 3: a cast is not allowed/],
    ["city || 'x' = 'y'", "invalid_filter", /"\|\|" at character 6: the operator \|\| is not allowed/],
    ["id = 0x1F", "invalid_filter", /syntax error at or near "x1F"/],
    ["id = 1__0", "invalid_filter", /syntax error at or near "__0"/],
    ["id = 1; DROP TABLE x", "invalid_filter", /";" is not allowed.*character 7/],
    ["1", "invalid_filter", /"1" at character 1: is not a condition/],
    ["id = 1 AND length(name)", "invalid_filter", /"length" at character 12: is not a condition/],
    ["NOT 'x'", "invalid_filter", /"'x'" at character 5: is not a condition/],
    ["DATE '2026-01-01'", "invalid_filter", /is not a condition/],
    ["id = 1 -- hi", "invalid_filter", /a comment \("--"\).*character 8/],
    ["id = 1 /* hi */", "invalid_filter", /a comment \("\/\*"\)/],
    [
      "read_csv('/etc/passwd') IS NULL",
      "invalid_filter",
      /"read_csv" at character 1: the function read_csv is not allowed/,
    ],
    ["getenv('HOME') = 'x'", "invalid_filter", /the function getenv is not allowed/],
    ["current_setting('allowed_paths') = 'x'", "invalid_filter", /the function current_setting/],
    [
      "id = 1 AND upper(name) = 'A' AND sha256(name) = 'x' AND md5(name) = 'y'",
      "invalid_filter",
      /"sha256" at character 34/,
    ],
    ["name::INTEGER = 1", "invalid_filter", /a cast is not allowed/],
    ["CASE WHEN id = 1 THEN true END", "invalid_filter", /"CASE" at character 1: CASE is not allowed/],
    ["id = $1", "invalid_filter", /"\$" is not allowed/],
    ["name = 'open", "invalid_filter", /a string is not closed/],
    ["t.id = 1", "invalid_filter", /a qualified column name/],
    ["id = 1 GROUP BY id", "invalid_filter", /one boolean expression/],
    ["id = 1 UNION SELECT 1", "invalid_filter", /one boolean expression/],
    ["id = 1 ORDER BY 1 LIMIT 2", "invalid_filter", /one boolean expression/],
    ["id ==== 1", "invalid_filter", /the operator ==== is not allowed/],
    ["name = \u2018x\u2019", "unknown_column", /no column "\u2018x\u2019"/],
    ["nope = 1", "unknown_column", /no column "nope" \(its columns: id, name, price, Sold At, city\)/],
    ["name ~ 'x'", "invalid_filter", /"~" at character 6: the function regexp_full_match is not allowed/],
    ["id IN (SELECT 1)", "invalid_filter", /subquery|literals only/],
    ["id IN (price, 2)", "invalid_filter", /IN \(\.\.\.\) takes literals only/],
    ["count(*) > 1", "invalid_filter", /the function count/],
    ["main.lower(name) = 'a'", "invalid_filter", /the function lower is not allowed/],
    ["(".repeat(10_000) + "id = 1" + ")".repeat(10_000), "invalid_filter", /characters long/],
    ["(".repeat(65) + "id = 1" + ")".repeat(65), "invalid_filter", /nest deeper than 64/],
    [`name = '${"x".repeat(100_000)}'`, "invalid_filter", new RegExp(`at most ${WHERE_MAX_CHARS}`)],
    ["   ", "invalid_filter", /empty/],
  ])("%s", async (where, code, detail) => {
    const { code: got, message } = await refusal(where);
    expect(got, message).toBe(code);
    expect(message).toMatch(detail);
  });
});

describe("the SQL check", () => {
  const tables = async (sql: string) =>
    checkSelect(
      String((await connection.runAndReadAll("SELECT json_serialize_sql($1::VARCHAR)", [sql])).getRowsJson()[0]![0]),
      sql,
    ).tables;

  it("finds the tables a SELECT reads, CTEs aside", async () => {
    expect(await tables(`WITH x AS (SELECT 1) SELECT * FROM x, "prices@2" p JOIN prices USING (id), range(3)`)).toEqual(
      ["prices@2", "prices"],
    );
  });

  it.each([
    ["COPY (SELECT 1) TO '/tmp/x.csv'", /only one read-only query/],
    ["ATTACH '/tmp/x.db'", /only one read-only query/],
    ["SELECT 1; SELECT 2", /exactly one query is allowed, got 2/],
    ["SELECT * FROM read_text('/etc/passwd')", /table function read_text is not allowed/],
    ["SELECT * FROM glob('/*')", /table function glob/],
    ["SELECT * FROM query('SELECT 1')", /table function query/],
    ["SELECT current_setting('allowed_paths')", /function current_setting is not allowed/],
    ["SELECT * FROM duckdb_settings()", /table function duckdb_settings/],
    ["SELECT * FROM pg_catalog.pg_settings", /"pg_catalog.pg_settings" is not a table of this order/],
    ["SELEC 1", /syntax error at or near "SELEC" at character 1/],
    ["DESCRIBE prices", /DESCRIBE, SHOW and SUMMARIZE are not allowed/],
    ["SHOW TABLES", /DESCRIBE, SHOW and SUMMARIZE are not allowed/],
    ["SUMMARIZE prices", /DESCRIBE, SHOW and SUMMARIZE are not allowed/],
    ["SELECT * FROM (DESCRIBE prices)", /DESCRIBE, SHOW and SUMMARIZE are not allowed/],
  ])("%s", async (sql, detail) => {
    const error = await tables(sql).then(
      () => undefined,
      (thrown: unknown) => thrown as AppError,
    );
    expect(error?.code).toBe("invalid_sql");
    expect(error?.message).toMatch(detail);
  });

  it("measures nesting with strings and comments aside", () => {
    expect(parenthesisDepth("SELECT ((1)) -- ((((\n, '(((' , \"((\" /* ((( */")).toBe(2);
  });
});
