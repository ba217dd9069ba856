import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { partFile, productsCsv, publicationDone } from "../tables/helpers";

/**
 * Rows in file order (contract Part 7) of tables whose own columns are named like the columns DuckDB
 * adds to a Parquet scan (`filename`, `file_index`, `file_row_number`, any case): each row comes
 * back with its own values, and pages in file order (the parts' order, then the rows' order in
 * each) neither overlap nor skip.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;
let key: string;

/** Rows `from` down to `to`: each part lists its ids in descending order, so file order is not id order. */
const descending = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, at) => from - at);

async function publish(table: string, parts: Record<string, Record<string, unknown>[]> | string) {
  const paths = [];
  if (typeof parts === "string") paths.push("--path", parts);
  else
    for (const [name, rows] of Object.entries(parts))
      paths.push("--path", await partFile(workDir, name, productsCsv(rows as Parameters<typeof productsCsv>[0])));
  const cliEnv = {
    DATABASE_URL: env.database.url,
    STORAGE_DIR: env.storageDir,
    DATASET_TEMP_DIR: path.join(workDir, "cli"),
  };
  const answer = await runAdminJson<{ publication: string }>(
    cliEnv,
    "table:publish",
    "--order",
    orderId,
    "--table",
    table,
    ...paths,
  );
  expect(await publicationDone(answer.publication, 240_000)).toMatchObject({ status: "ready" });
}

beforeAll(async () => {
  env = await createTestEnvironment("explore-file-order-columns");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "explore-file-order-"));
  const account = await buyer("file-order");
  orderId = (await order(account.id, { name: "Ledgers" })).id;
  key = (await apiKey(account.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine"), RATE_LIMIT_EXEMPT_BUYERS: account.id },
  });
  // A row number of its own that sorts the other way from the file order, and a file name of its own.
  const ledger = (ids: number[]) => ids.map((id) => ({ id, File_Row_Number: id, filename: `mine-${id}.csv` }));
  await publish("ledger", { "l-a.csv": ledger(descending(30, 1)), "l-b.csv": ledger(descending(60, 31)) });
  const marks = (ids: number[]) => ids.map((id) => ({ id, FILENAME: `own-${id}`, file_index: 7 }));
  await publish("marks", { "m-a.csv": marks(descending(20, 1)), "m-b.csv": marks(descending(40, 21)) });
  const labels = (ids: number[]) => ids.map((id) => ({ id, FileName: `label-${id}` }));
  await publish("labels", { "b-a.csv": labels(descending(20, 1)), "b-b.csv": labels(descending(40, 21)) });
  // Types Spark lacks, which the table's Parquet parts store widened (UBIGINT as DECIMAL(20,0)).
  const unsigned = path.join(workDir, "unsigned.parquet");
  const duckdb = await DuckDBInstance.create(":memory:");
  const connection = await duckdb.connect();
  await connection.run(
    `COPY (SELECT * FROM (VALUES
       (1, 5::UBIGINT, 7::UTINYINT, '12:30:00'::TIME, '8a4c2b9e-0d1f-4c3a-9b7e-5f6a7b8c9d0e'::UUID),
       (2, 18446744073709551615::UBIGINT, 255::UTINYINT, '23:59:59.5'::TIME, NULL::UUID)) t(id, u, small, opens, uid))
     TO '${unsigned}' (FORMAT parquet)`,
  );
  connection.closeSync();
  duckdb.closeSync();
  await publish("unsigned", unsigned);
}, 900_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

type Page = { columns: { name: string }[]; rows: unknown[][]; next_offset: number | null };

/** Every page of the table's rows with `query`, `limit` at a time, until next_offset is null. */
async function allPages(table: string, query: Record<string, string> = {}): Promise<Page> {
  const all: Page = { columns: [], rows: [], next_offset: 0 };
  for (let offset: number | null = 0; offset !== null;) {
    const response = await fetch(
      `${server.url}/api/v1/orders/${orderId}/tables/${table}/rows?${new URLSearchParams({ ...query, limit: "7", offset: String(offset) })}`,
      { headers: { Authorization: `Bearer ${key}` } },
    );
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const page = JSON.parse(text) as Page;
    all.columns = page.columns;
    all.rows.push(...page.rows);
    offset = page.next_offset;
  }
  return all;
}

describe("rows of a table with columns named like DuckDB's file columns", () => {
  it.each([
    ["ledger", ["id", "File_Row_Number", "filename"], (id: number) => [id, id, `mine-${id}.csv`]],
    ["marks", ["id", "FILENAME", "file_index"], (id: number) => [id, `own-${id}`, 7]],
    ["labels", ["id", "FileName"], (id: number) => [id, `label-${id}`]],
  ] as const)("%s: its own values, every row once, in file order", async (table, columns, row) => {
    const page = await allPages(table);
    expect(page.columns.map((column) => column.name)).toEqual(columns);
    const count = table === "ledger" ? 30 : 20;
    const fileOrder = [...descending(count, 1), ...descending(2 * count, count + 1)];
    expect(page.rows).toEqual(fileOrder.map(row));
  });

  it("filters and sorts by them as by any column, file order breaking ties", async () => {
    const page = await allPages("ledger", {
      columns: "filename,id",
      where: "file_row_number > 25 AND file_row_number <= 35",
      order_by: "filename desc",
    });
    expect(page.rows).toEqual([...descending(35, 31), ...descending(30, 26)].map((id) => [`mine-${id}.csv`, id]));
    const tied = await allPages("marks", {
      columns: "id",
      where: "file_index = 7 AND id > 15",
      order_by: "file_index",
    });
    expect(tied.rows).toEqual([...descending(20, 16), ...descending(40, 21)].map((id) => [id]));
  });
});

/** /sql's answer to `q` (one page of at most 100 rows). */
async function sqlAnswer(q: string): Promise<{ columns: { name: string; type: string }[]; rows: unknown[][] }> {
  const response = await fetch(`${server.url}/api/v1/orders/${orderId}/sql?${new URLSearchParams({ q })}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return JSON.parse(text) as { columns: { name: string; type: string }[]; rows: unknown[][] };
}

describe("a table of types Spark lacks (its parts store them widened)", () => {
  const ownColumns = [
    { name: "id", type: "INTEGER" },
    { name: "u", type: "UBIGINT" },
    { name: "small", type: "UTINYINT" },
    { name: "opens", type: "TIME" },
    { name: "uid", type: "UUID" },
  ];
  const ownRows = [
    [1, 5, 7, "12:30:00", "8a4c2b9e-0d1f-4c3a-9b7e-5f6a7b8c9d0e"],
    [2, "18446744073709551615", 255, "23:59:59.5", null],
  ];

  it("rows are answered in the table's own types, as its preview gives them", async () => {
    const page = (await allPages("unsigned")) as Page & { columns: { name: string; type: string }[] };
    expect(page.columns).toEqual(ownColumns);
    expect(page.rows).toEqual(ownRows);
  });

  it("rows filter in them: a time compares as a time, not as its text", async () => {
    // As text, "9:00:00" sorts after both times; as a TIME it is before both.
    const page = await allPages("unsigned", { columns: "id", where: "opens > '9:00:00'" });
    expect(page.rows).toEqual([[1], [2]]);
  });

  it("/sql reads the same types, its version and its changes alike", async () => {
    expect(await sqlAnswer("SELECT * FROM unsigned ORDER BY id")).toMatchObject({
      columns: ownColumns,
      rows: ownRows,
    });
    expect(await sqlAnswer('SELECT * FROM "unsigned@1" ORDER BY id')).toMatchObject({ columns: ownColumns });
    const changes = await sqlAnswer('SELECT u, opens, uid, _change_type FROM "unsigned@changes" ORDER BY id');
    expect(changes.columns).toEqual([
      ...ownColumns.slice(1, 2),
      ...ownColumns.slice(3),
      { name: "_change_type", type: "VARCHAR" },
    ]);
    expect(changes.rows).toEqual(ownRows.map(([, u, , opens, uid]) => [u, opens, uid, "insert"]));
    // Typed arithmetic: UBIGINT's maximum less one, not a DECIMAL's.
    expect(await sqlAnswer("SELECT max(u) - 1 AS below, typeof(max(u)) AS type FROM unsigned")).toMatchObject({
      rows: [["18446744073709551614", "UBIGINT"]],
    });
  });
});
