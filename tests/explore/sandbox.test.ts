import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { engineProcessesOf } from "../faults/helpers/processes";
import { keptDirectoryPrefix } from "../../lib/engine/left-directories";
import { partFile, products, productsCsv, publicationDone, withoutQualityChecks } from "../tables/helpers";

/**
 * Rows and SQL (contract Part 7) on the production server, its worker and engine: tables made by
 * `table:publish`, pages read through the API, and every escape from the query sandbox tried: each
 * answered 4xx with a precise detail, never a 5xx, and no server file's content in any answer.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;
let otherOrderId: string;
let key: string;
let otherPartPath: string;
let otherKey: string;

async function publish(
  order: string,
  table: string,
  parts: Record<string, ReturnType<typeof products>>,
  options: string[] = [],
) {
  const paths = [];
  for (const [name, rows] of Object.entries(parts))
    paths.push("--path", await partFile(workDir, name, productsCsv(rows)));
  const cliEnv = {
    DATABASE_URL: env.database.url,
    STORAGE_DIR: env.storageDir,
    DATASET_TEMP_DIR: path.join(workDir, "cli"),
  };
  const answer = await runAdminJson<{ publication: string }>(
    cliEnv,
    "table:publish",
    "--order",
    order,
    "--table",
    table,
    ...paths,
    ...options,
  );
  expect(await publicationDone(answer.publication, 240_000)).toMatchObject({ status: "ready" });
}

beforeAll(async () => {
  env = await createTestEnvironment("explore-sandbox");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "explore-sandbox-"));
  const account = await buyer("explore");
  const other = await buyer("explore-other");
  orderId = (await order(account.id, { name: "Prices" })).id;
  otherOrderId = (await order(other.id, { name: "Secret" })).id;
  key = (await apiKey(account.id)).secret;
  otherKey = (await apiKey(other.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
      RATE_LIMIT_EXEMPT_BUYERS: account.id,
      DATASET_QUERY_SECONDS: "3",
      DATASET_QUERY_PROCESSES: "2",
    },
  });
  // v1: ids 1-60 in two parts; v2: ids 1-50, ids 1-5 repriced.
  await publish(orderId, "products", { "p-a.csv": products(1, 30), "p-b.csv": products(31, 30) }, ["--key", "id"]);
  // v2 deletes a sixth of the rows, which the quality gate (#40) would hold: its checks are off here.
  await withoutQualityChecks(orderId, "products");
  await publish(orderId, "products", { "p2.csv": products(1, 50, (id) => (id <= 5 ? id * 2 : id * 1.5)) });
  await publish(orderId, "big", { "big.csv": products(1, 300) });
  // Keyed by id, and version 2 repeats ids 4 and 5 (an append table may): only the file order tells them apart.
  await publish(orderId, "events", { "e1.csv": products(1, 5) }, ["--mode", "append", "--key", "id"]);
  await publish(orderId, "events", { "e2.csv": products(4, 5, (id) => id * 10 + 0.5) });
  await publish(otherOrderId, "secret", { "secret.csv": [{ id: 1, name: "other buyer's row", price: 1 }] });
  const rendition = await db().fileRendition.findFirstOrThrow({
    where: { format: "parquet", file: { orderId: otherOrderId } },
    select: { storageKey: true },
  });
  otherPartPath = path.join(env.storageDir, rendition.storageKey!);
}, 1_200_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const api = (pathAndQuery: string) =>
  fetch(`${server.url}/api/v1${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
const rows = (query: Record<string, string>, table = "products") =>
  api(`/orders/${orderId}/tables/${table}/rows?${new URLSearchParams(query)}`);
const sql = (q: string, limit?: number) =>
  api(`/orders/${orderId}/sql?${new URLSearchParams({ q, ...(limit ? { limit: String(limit) } : {}) })}`);

/** Issue 53's reproduction: DuckDB's settings (server paths) through a name a CTE's scope hides. */
const CTE_TRICK =
  "SELECT name, setting FROM (WITH pg_settings AS (SELECT 1) SELECT 1) t, pg_settings, (SELECT 1 FROM products LIMIT 1) p WHERE name IN ('allowed_paths','temp_directory')";

/** A refusal: the status and code, a detail matching `detail`, and nothing of a server file in the answer. */
async function refused(response: Response, status: number, code: string, detail: RegExp): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const body = JSON.parse(text) as { code: string; detail: string };
  expect(body.code, text).toBe(code);
  expect(body.detail).toMatch(detail);
  expect(text).not.toMatch(/root:x:0:0|other buyer's row/);
  expect(text).not.toContain(env.storageDir);
  expect(text).not.toContain(path.join(workDir, "engine"));
  expect(text).not.toMatch(/read_parquet\('|kept-\d+/);
}

describe("rows", () => {
  it("answers a page in key order with the current version, and the next offset", async () => {
    const response = await rows({ limit: "3" });
    const page = (await response.json()) as {
      version: number;
      columns: { name: string }[];
      rows: unknown[][];
      next_offset: number;
    };
    expect(response.status).toBe(200);
    expect(page).toMatchObject({ version: 2, next_offset: 3 });
    expect(page.columns.map((column) => column.name)).toEqual(["id", "name", "price"]);
    expect(page.rows).toEqual([
      [1, "Product 1", 2],
      [2, "Product 2", 4],
      [3, "Product 3", 6],
    ]);
  });

  it("filters, chooses columns, sorts and pages without overlap or gap", async () => {
    const seen: unknown[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const response = await rows({
        version: "1",
        columns: "price,id",
        where: "id > 10 AND NOT name LIKE '%7'",
        order_by: "price desc",
        limit: "7",
        offset: String(offset),
      });
      const page = (await response.json()) as { version: number; rows: number[][]; next_offset: number | null };
      expect(page.version).toBe(1);
      seen.push(...page.rows.map((row) => row[1]));
      offset = page.next_offset;
    }
    const expected = products(11, 50)
      .filter((p) => !p.name.endsWith("7"))
      .map((p) => p.id)
      .reverse();
    expect(seen).toEqual(expected);
  });

  it("orders a table without key by its file order", async () => {
    const page = (await (await rows({ columns: "id", offset: "295" }, "big")).json()) as {
      rows: number[][];
      next_offset: null;
    };
    expect(page).toEqual(expect.objectContaining({ next_offset: null }));
    expect(page.rows.flat()).toEqual([296, 297, 298, 299, 300]);
  });

  it("reads an append table's version as every version up to it, a repeated key in file order", async () => {
    const read = async (query: Record<string, string>) =>
      ((await (await rows({ columns: "id,price", ...query }, "events")).json()) as { rows: number[][] }).rows;
    // Version 1's rows of ids 4 and 5 before version 2's, whichever way the key is sorted.
    expect(await read({})).toEqual([
      [1, 1.5],
      [2, 3],
      [3, 4.5],
      [4, 6],
      [4, 40.5],
      [5, 7.5],
      [5, 50.5],
      [6, 60.5],
      [7, 70.5],
      [8, 80.5],
    ]);
    expect((await read({ order_by: "id desc", limit: "4" })).slice(2)).toEqual([
      [6, 60.5],
      [5, 7.5],
    ]);
    expect(await read({ order_by: "id desc", offset: "4", limit: "2" })).toEqual([
      [5, 50.5],
      [4, 6],
    ]);
    expect((await read({ version: "1" })).map(([id]) => id)).toEqual([1, 2, 3, 4, 5]);
  });

  it.each([
    [
      { columns: "nope" },
      400,
      "unknown_column",
      /columns: the table has no column "nope" \(its columns: id, name, price\)/,
    ],
    [{ columns: "id,id" }, 400, "invalid_request", /"id" is asked twice/],
    [{ columns: "" }, 400, "invalid_request", /columns: name at least one column/],
    [{ columns: "id,,name" }, 400, "invalid_request", /columns: a name is empty/],
    [{ order_by: "price + 1" }, 400, "invalid_request", /order_by: "price \+ 1" is not a column name/],
    [{ order_by: "nope desc" }, 400, "unknown_column", /order_by: the table has no column "nope"/],
    [
      { where: "id IN (SELECT id FROM products)" },
      400,
      "invalid_filter",
      /"SELECT" at character 8: a subquery is not allowed/,
    ],
    [{ where: "id = 1; SELECT 1" }, 400, "invalid_filter", /";" is not allowed/],
    [{ where: "id = 1 -- x" }, 400, "invalid_filter", /a comment/],
    [{ where: "read_csv('/etc/passwd') IS NOT NULL" }, 400, "invalid_filter", /the function read_csv is not allowed/],
    [{ where: "getenv('HOME') = 'x'" }, 400, "invalid_filter", /the function getenv/],
    [{ where: "current_setting('allowed_paths') = 'x'" }, 400, "invalid_filter", /the function current_setting/],
    [{ where: `${"(".repeat(1_000)}id = 1${")".repeat(1_000)}` }, 400, "invalid_filter", /nest deeper than 64 levels/],
    [{ where: `name = '${"x".repeat(5_000)}'` }, 400, "invalid_filter", /5009 characters long; at most 4000/],
    [{ where: "name = \u2018Product 1\u2019" }, 400, "invalid_filter", /syntax error at or near "1" at character 17/],
    [{ where: "name > 3" }, 400, "invalid_filter", /where: /],
    [{ limit: "0" }, 400, "invalid_request", /limit must be from 1 to 1000/],
    [{ limit: "1001" }, 400, "invalid_request", /limit must be from 1 to 1000/],
    [{ offset: "-1" }, 400, "invalid_request", /offset/],
    [{ version: "9" }, 404, "version_not_found", /no version 9/],
    // The bounds the MCP tools share (contract Part 8): a version is 1 to 2^31-1.
    [{ version: "2147483647" }, 404, "version_not_found", /no version 2147483647/],
    [{ version: "2147483648" }, 400, "invalid_request", /version must be a whole number from 1 to 2147483647/],
    [{ version: "0" }, 400, "invalid_request", /version must be a positive whole number/],
  ])("%j is refused", async (query, status, code, detail) => {
    await refused(await rows(query as Record<string, string>), status, code, detail);
  });

  it("refuses a URL past the HTTP server's 16 KB of headers (a 10,000-deep parenthesis, a 100 KB string) with 431", async () => {
    for (const where of [`${"(".repeat(10_000)}id = 1${")".repeat(10_000)}`, `name = '${"x".repeat(100_000)}'`]) {
      const response = await rows({ where });
      expect(response.status).toBe(431);
      expect(await response.text()).not.toMatch(/root:x:0:0/);
    }
  });

  it("answers another buyer's order and a missing table as missing", async () => {
    await refused(await api(`/orders/${otherOrderId}/tables/secret/rows`), 404, "order_not_found", /No order/);
    await refused(await rows({}, "nope"), 404, "table_not_found", /no table named "nope"/);
  });
});

describe("sql", () => {
  it("reads the current version, a version, the changes, and says when rows were left out", async () => {
    const answer = async (q: string, limit?: number) => {
      const response = await sql(q, limit);
      expect(response.status, await response.clone().text()).toBe(200);
      return (await response.json()) as { columns: { name: string }[]; rows: unknown[][]; truncated: boolean };
    };
    expect((await answer("SELECT count(*) AS n, sum(price) FROM products")).rows).toEqual([[50, 1920]]);
    expect((await answer(`SELECT count(*) FROM "products@1"`)).rows).toEqual([["60"].map(Number)]);
    const changes = await answer(
      `SELECT _change_type, _commit_version, count(*) FROM "products@changes" GROUP BY ALL ORDER BY 1, 2`,
    );
    expect(changes.rows).toEqual([
      ["delete", 2, 10],
      ["insert", 1, 60],
      ["update_postimage", 2, 5],
      ["update_preimage", 2, 5],
    ]);
    expect((await answer("SELECT count(*) FROM products JOIN PRODUCTS p2 USING (id)")).rows).toEqual([[50]]);
    // Decimals as strings with their scale, whatever their width (contract Part 7).
    expect((await answer("SELECT 1.50::DECIMAL(9,2), 3::DECIMAL(4,0), -0.05::DECIMAL(18,3)")).rows).toEqual([
      ["1.50", "3", "-0.050"],
    ]);
    // Tables the text mentions but does not read (a literal, a CTE of the same name) are not views of the query.
    const shadowed =
      "WITH events AS (SELECT 2 AS n) SELECT n, (SELECT count(*) FROM products) FROM events WHERE 'big' <> ''";
    expect((await answer(shadowed)).rows).toEqual([[2, 50]]);
    const both = `SELECT (SELECT count(*) FROM "Products")::INTEGER, (SELECT count(*) FROM "products@1")::INTEGER`;
    expect((await answer(both)).rows).toEqual([[50, 60]]);
    const cut = await answer("WITH p AS (SELECT id FROM products) SELECT id FROM p ORDER BY id", 4);
    expect(cut).toMatchObject({ rows: [[1], [2], [3], [4]], truncated: true });
    // The table functions that read nothing, beside the order's tables.
    const functions =
      "SELECT (SELECT count(*) FROM range(3)), (SELECT sum(g) FROM generate_series(1, 3) t(g)), " +
      "(SELECT count(*) FROM unnest([1, 2]) u(x) JOIN products ON products.id = u.x)";
    expect((await answer(functions)).rows).toEqual([[3, 6, 2]]);
  });

  it.each([
    ["COPY (SELECT 1) TO '/tmp/out.csv'", 400, "invalid_sql", /only one read-only query/],
    ["ATTACH '/tmp/x.db' AS x", 400, "invalid_sql", /only one read-only query/],
    ["INSTALL httpfs", 400, "invalid_sql", /only one read-only query/],
    ["LOAD httpfs", 400, "invalid_sql", /only one read-only query/],
    ["SET threads = 64", 400, "invalid_sql", /only one read-only query/],
    ["RESET memory_limit", 400, "invalid_sql", /only one read-only query/],
    ["PRAGMA enable_external_access", 400, "invalid_sql", /only one read-only query/],
    ["DESCRIBE products", 400, "invalid_sql", /DESCRIBE, SHOW and SUMMARIZE are not allowed/],
    ["SHOW TABLES", 400, "invalid_sql", /DESCRIBE, SHOW and SUMMARIZE are not allowed/],
    ["CREATE TABLE x AS SELECT 1", 400, "invalid_sql", /only one read-only query/],
    ["SELECT 1; SELECT 2", 400, "invalid_sql", /exactly one query is allowed, got 2/],
    ["SELECT * FROM read_text('/etc/passwd')", 400, "invalid_sql", /table function read_text is not allowed/],
    ["SELECT * FROM read_blob('/etc/passwd')", 400, "invalid_sql", /table function read_blob/],
    ["SELECT * FROM read_csv('/etc/passwd')", 400, "invalid_sql", /table function read_csv/],
    ["SELECT * FROM glob('/*')", 400, "invalid_sql", /table function glob/],
    ["SELECT getenv('HOME')", 400, "invalid_sql", /function getenv is not allowed/],
    ["SELECT current_setting('allowed_paths')", 400, "invalid_sql", /function current_setting is not allowed/],
    ["SELECT * FROM duckdb_settings()", 400, "invalid_sql", /table function duckdb_settings/],
    ["SELECT * FROM pg_catalog.pg_settings", 400, "invalid_sql", /is not a table of this order/],
    // What the query reads is the binder's to say (contract Part 8): a CTE's name hides nothing from it.
    [CTE_TRICK, 400, "invalid_sql", /"pg_settings" is not a table of this order but DuckDB's catalog/],
    [
      "SELECT sql FROM (WITH duckdb_views AS (SELECT 1) SELECT 1) t, duckdb_views, (SELECT 1 FROM products LIMIT 1) p",
      400,
      "invalid_sql",
      /"duckdb_views" is not a table of this order but DuckDB's catalog/,
    ],
    ["SELECT get_block_size('memory')", 400, "invalid_sql", /pragma_database_size\(\) is not a table of this order/],
    ["SELECT * FROM duckdb_views", 400, "invalid_sql", /this order has no table "duckdb_views"/],
    ["SELECT * FROM pg_settings", 400, "invalid_sql", /this order has no table "pg_settings"/],
    ["SELECT * FROM information_schema.tables", 400, "invalid_sql", /"information_schema.tables" is not a table/],
    ["SELECT * FROM duckdb_tables()", 400, "invalid_sql", /table function duckdb_tables is not allowed/],
    ["SELECT * FROM duckdb_extensions()", 400, "invalid_sql", /table function duckdb_extensions is not allowed/],
    ["SELECT * FROM duckdb_functions()", 400, "invalid_sql", /table function duckdb_functions is not allowed/],
    ["SELECT * FROM read_parquet('/etc/passwd')", 400, "invalid_sql", /table function read_parquet is not allowed/],
    [
      "SELECT * FROM secret",
      400,
      "invalid_sql",
      /this order has no table "secret" \(its tables: big, events, products/,
    ],
    [`SELECT * FROM "products@7"`, 404, "version_not_found", /no version 7/],
    ["SELECT * FROM range(1e18)", 400, "invalid_sql", /No function matches/],
    // The limit as set (DATASET_QUERY_SECONDS=3 here), not the default's 10.
    [
      "SELECT count(*) FROM range(1000000000000000000)",
      422,
      "query_timeout",
      /more than 3 seconds of engine time: narrow it/,
    ],
    [
      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
      422,
      "query_timeout",
      /narrow it/,
    ],
    [
      `SELECT count(*) FROM ${Array.from({ length: 10 }, (_, i) => `big b${i}`).join(", ")}`,
      422,
      "query_timeout",
      /narrow it/,
    ],
    // The API names the SQL by its parameter, q (lib/errors.ts inputMessage).
    ["SELECT * FROM", 400, "invalid_sql", /^q: syntax error/],
    [`SELECT '${"x".repeat(8001)}'`, 400, "invalid_sql", /at most 8000/],
  ])("%s is refused", async (q, status, code, detail) => {
    await refused(await sql(q), status, code, detail);
  });

  it("never reads another order's file, even by its path", async () => {
    const lateral = `SELECT * FROM products WHERE id = (SELECT count(*) FROM read_parquet('${otherPartPath}'))`;
    await refused(await sql(lateral), 400, "invalid_sql", /table function read_parquet is not allowed/);
  });

  it("answers 409 once the order is refunded", async () => {
    await db().order.update({ where: { id: orderId }, data: { status: "refunded" } });
    try {
      // Rows and SQL read tables: no word of downloading files.
      const tables = /is refunded; tables can be read \(rows, SQL, subsets\) only from delivered orders\.$/;
      await refused(await sql("SELECT 1"), 409, "order_not_delivered", tables);
      await refused(await rows({}), 409, "order_not_delivered", tables);
    } finally {
      await db().order.update({ where: { id: orderId }, data: { status: "delivered" } });
    }
  });

  it("keeps one buyer's slow queries from starving another's", async () => {
    const finished: string[] = [];
    const slow = "SELECT count(*) FROM range(1000000000000000000)";
    const mine = [1, 2, 3].map((n) =>
      sql(slow).then(async (response) => {
        expect(response.status).toBe(422);
        finished.push(`a${n}`);
      }),
    );
    const theirs = fetch(`${server.url}/api/v1/orders/${otherOrderId}/sql?q=${encodeURIComponent("SELECT 42")}`, {
      headers: { Authorization: `Bearer ${otherKey}` },
    }).then(async (response) => {
      expect(await response.json()).toMatchObject({ rows: [[42]], truncated: false });
      finished.push("b");
    });
    await Promise.all([...mine, theirs]);
    // One engine process per account: the other buyer's query ran beside the first slow one, before the rest.
    expect(finished.indexOf("b")).toBeLessThan(2);
  });
});

describe("instances kept between queries", () => {
  it("live in private directories of the query processes; the other buyer reads only their own files", async () => {
    expect((await rows({ limit: "2" })).status).toBe(200);
    expect((await rows({ limit: "2", offset: "2" })).status).toBe(200);
    const root = path.join(workDir, "engine");
    const live = new Set(await engineProcessesOf(server.pid!));
    const kept = (await fs.readdir(root)).filter((name) =>
      [...live].some((pid) => name.startsWith(keptDirectoryPrefix(pid))),
    );
    expect(kept.length).toBeGreaterThanOrEqual(1);
    for (const name of kept) expect((await fs.stat(path.join(root, name))).mode & 0o777).toBe(0o700);
    const theirs = await fetch(
      `${server.url}/api/v1/orders/${otherOrderId}/sql?q=${encodeURIComponent("SELECT * FROM secret")}`,
      {
        headers: { Authorization: `Bearer ${otherKey}` },
      },
    );
    const text = await theirs.text();
    expect(theirs.status, text).toBe(200);
    expect(text).toContain("other buyer's row");
    const mine = await sql("SELECT * FROM products");
    expect(await mine.text()).not.toContain("other buyer's row");
  });
});
