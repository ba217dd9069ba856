import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../clients/typescript/src/client";
import { DatasetAccessError } from "../../clients/typescript/src/errors";
import { rowObjects } from "../../clients/typescript/src/explore";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { products, productsCsv, publicationDone } from "../tables/helpers";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { buildTypeScriptClient, runCli, runCliOnTerminal, type CliRun } from "./cli";

/**
 * The TypeScript client's rows and SQL (contract Part 7): the library's methods and the
 * `dataset-access rows` and `sql` commands, built as users get them, against the production server
 * on a real PostgreSQL: a keyed table `prices`, version 1 of 30 products, version 2 of 45.
 */
let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let orderId: string;

const cliEnv = () => ({ DATASET_ACCESS_URL: server.url, DATASET_ACCESS_KEY: key });
const client = () => createClient({ baseUrl: server.url, apiKey: key });

beforeAll(async () => {
  env = await createTestEnvironment("ts_explore_client");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "ts-explore-client-"));
  const account = await buyer("explore-client");
  key = (await apiKey(account.id)).secret;
  orderId = (await order(account.id, { name: "prices" })).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", RATE_LIMIT_EXEMPT_BUYERS: account.id, DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  const publish = async (rows: ReturnType<typeof products>, version: number) => {
    const published = await publishTable({
      orderId,
      table: "prices",
      key: ["id"],
      parts: [{ name: `prices-${version}.csv`, source: { stream: Readable.from([Buffer.from(productsCsv(rows))]) } }],
    });
    expect(await publicationDone(published.publication, 240_000)).toMatchObject({ status: "ready", version });
  };
  await Promise.all([buildTypeScriptClient(), publish(products(1, 30), 1).then(() => publish(products(1, 45), 2))]);
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

describe("the library", () => {
  it("reads a page of rows through a filter, columns and an order, and every page of a version", async () => {
    const page = await client().tables.rows(orderId, "prices", {
      columns: ["name", "price"],
      where: "id BETWEEN 3 AND 5",
      orderBy: "id desc",
    });
    expect(page).toEqual({
      version: 2,
      columns: [
        { name: "name", type: "VARCHAR" },
        { name: "price", type: "DOUBLE" },
      ],
      rows: [
        ["Product 5", 7.5],
        ["Product 4", 6],
        ["Product 3", 4.5],
      ],
      next_offset: null,
    });
    expect(rowObjects(page.columns, page.rows)[0]).toEqual({ name: "Product 5", price: 7.5 });
    const pages = [];
    for await (const each of client().tables.rowPages(orderId, "prices", { version: 1, columns: ["id"], limit: 7 }))
      pages.push(each);
    expect(pages.map((each) => each.rows.length)).toEqual([7, 7, 7, 7, 2]);
    expect(pages.every((each) => each.version === 1)).toBe(true);
    expect(pages.flatMap((each) => each.rows.map((row) => row[0]))).toEqual(products(1, 30).map((row) => row.id));
  });

  it("runs one SELECT over the current version, a version by number and the changes", async () => {
    const answer = await client().sql(
      orderId,
      'SELECT (SELECT count(*) FROM "prices")::INTEGER AS now, (SELECT count(*) FROM "prices@1")::INTEGER AS first, ' +
        `(SELECT count(*) FROM "prices@changes" WHERE _commit_version = 2)::INTEGER AS inserted`,
    );
    expect(answer).toEqual({
      columns: [
        { name: "now", type: "INTEGER" },
        { name: "first", type: "INTEGER" },
        { name: "inserted", type: "INTEGER" },
      ],
      rows: [[45, 30, 15]],
      truncated: false,
    });
    const cut = await client().sql(orderId, 'SELECT id FROM "prices" ORDER BY id', { limit: 2 });
    expect(cut).toMatchObject({ rows: [[1], [2]], truncated: true });
  });

  it.each([
    ["rows", () => client().tables.rows(orderId, "prices", { where: "id = 1; DROP TABLE x" }), 400, "invalid_filter"],
    ["rows", () => client().tables.rows(orderId, "prices", { columns: ["id", "nope"] }), 400, "unknown_column"],
    ["rows", () => client().tables.rows(orderId, "nope"), 404, "table_not_found"],
    ["rows", () => client().tables.rows(orderId, "prices", { version: 9 }), 404, "version_not_found"],
    ["sql", () => client().sql(orderId, "INSTALL httpfs"), 400, "invalid_sql"],
  ])("%s refusals are typed: %#", async (_, call, status, code) => {
    const error = await call().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(DatasetAccessError);
    expect(error).toMatchObject({ status, code });
  });
});

describe("dataset-access rows and sql", () => {
  it("rows prints the page as JSON off a terminal, every page with --all, CSV with --csv", async () => {
    const page = await runCli(
      ["rows", "--order", orderId, "--table", "prices", "--columns", "id,name", "--where", "id > 40", "--limit", "3"],
      cliEnv(),
    );
    expect(page.code, page.stderr).toBe(0);
    expect(JSON.parse(page.stdout)).toMatchObject({
      version: 2,
      rows: [
        [41, "Product 41"],
        [42, "Product 42"],
        [43, "Product 43"],
      ],
      next_offset: 3,
    });
    const all = await runCli(
      [
        "rows",
        "--order",
        orderId,
        "--table",
        "prices",
        "--columns",
        "id",
        "--where",
        "id > 40",
        "--limit",
        "2",
        "--all",
      ],
      cliEnv(),
    );
    expect(JSON.parse(all.stdout)).toMatchObject({ rows: [[41], [42], [43], [44], [45]], next_offset: null });
    const csv = await runCli(
      [
        "rows",
        "--order",
        orderId,
        "--table",
        "prices",
        "--version",
        "1",
        "--where",
        "id >= 29",
        "--all",
        "--limit",
        "1",
        "--csv",
      ],
      cliEnv(),
    );
    expect(csv.stdout).toBe("id,name,price\r\n29,Product 29,43.5\r\n30,Product 30,45\r\n");
  });

  it("sql prints JSON, CSV, or a table on a terminal that says when more rows exist", async () => {
    const query = 'SELECT id, name FROM "prices" WHERE id <= 3 ORDER BY id';
    const json = await runCli(["sql", "--order", orderId, "--query", query], cliEnv());
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      rows: [
        [1, "Product 1"],
        [2, "Product 2"],
        [3, "Product 3"],
      ],
      truncated: false,
    });
    const csv = await runCli(["sql", "--order", orderId, "--query", query, "--csv"], cliEnv());
    expect(csv.stdout).toBe("id,name\r\n1,Product 1\r\n2,Product 2\r\n3,Product 3\r\n");
    const terminal = await runCliOnTerminal(["sql", "--order", orderId, "--query", query, "--limit", "2"], cliEnv());
    expect(terminal.code).toBe(0);
    const lines = terminal.stdout.split(/\r?\n/);
    expect(lines.slice(0, 3)).toEqual(["id  name", "1   Product 1", "2   Product 2"]);
    expect(terminal.stdout).toContain("2 rows.");
    expect(terminal.stdout).toContain("More rows exist: raise --limit (up to 1000) or narrow the query.");
  });

  it.each([
    [["rows", "--order", "ord_x"], 2, "rows needs --order ID --table NAME."],
    [["rows", "--order", "ord_x", "--table", "t", "--limit", "0"], 2, "--limit must be a whole number from 1 to 1000."],
    [["rows", "--order", "ord_x", "--table", "t", "--columns", "a,,b"], 2, "--columns is a comma-separated list"],
    [["sql", "--order", "ord_x"], 2, 'sql needs --order ID --query "SELECT ...".'],
    [["sql", "--order", "ord_x", "--query", "SELECT 1", "--limit", "1e3"], 2, "--limit must be a whole number"],
  ])("refuses a usage error: %j", async (args, code, message) => {
    const run = await runCli(args, cliEnv());
    expect(run.code).toBe(code);
    expect(run.stderr).toContain(message);
  });

  it("exits 3 with the API's code and detail when the server refuses", async () => {
    const run = await runCli(
      ["rows", "--order", orderId, "--table", "prices", "--where", "read_text('/etc/passwd') = ''"],
      cliEnv(),
    );
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/^The API refused: invalid_filter: --where: .*read_text/m);
    expect(run.stderr).not.toContain("root:");
  });
});

/** `python3 dataset_access.py ARGS`, the Python command, to its end. */
async function runPython(args: string[], env: Record<string, string>): Promise<CliRun> {
  const script = path.resolve("clients/python/dataset_access.py");
  return promisify(execFile)("python3", [script, ...args], { env: { ...process.env, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: CliRun) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

describe("python3 dataset_access.py rows and sql print what dataset-access prints", () => {
  const cases: [string, string[]][] = [
    [
      "rows, a page as JSON",
      ["rows", "--table", "prices", "--columns", "id,name", "--where", "id > 40", "--limit", "3"],
    ],
    ["rows --all", ["rows", "--table", "prices", "--columns", "id", "--where", "id > 40", "--limit", "2", "--all"]],
    [
      "rows --all --csv",
      ["rows", "--table", "prices", "--version", "1", "--where", "id >= 29", "--all", "--limit", "1", "--csv"],
    ],
    ["rows --offset", ["rows", "--table", "prices", "--order-by", "id desc", "--limit", "2", "--offset", "5"]],
    ["sql as JSON", ["sql", "--query", 'SELECT id, name FROM "prices" WHERE id <= 3 ORDER BY id']],
    ["sql --csv", ["sql", "--query", 'SELECT id, name, price FROM "prices" ORDER BY id', "--limit", "4", "--csv"]],
    ["sql refused", ["sql", "--query", "INSTALL httpfs"]],
  ];
  it.each(cases)("%s", async (_, args) => {
    const withOrder = [args[0]!, "--order", orderId, ...args.slice(1)];
    const [typescript, python] = await Promise.all([runCli(withOrder, cliEnv()), runPython(withOrder, cliEnv())]);
    expect(python.code, python.stderr).toBe(typescript.code);
    if (typescript.code === 0) {
      expect(python.stdout).toBe(typescript.stdout);
      return;
    }
    // The API's `q` is the command's --query.
    expect(typescript.stderr).toMatch(/^The API refused: invalid_sql: --query: only one read-only query/);
    const withoutRequest = (stderr: string) => stderr.replace(/ \(request [\w-]+\)/, "");
    expect(withoutRequest(python.stderr)).toBe(withoutRequest(typescript.stderr));
  });

  it("on a terminal: the aligned table, its count and where more rows follow", async () => {
    const args = ["rows", "--order", orderId, "--table", "prices", "--columns", "id,name", "--limit", "2"];
    const pty = "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))";
    const script = path.resolve("clients/python/dataset_access.py");
    const python = await promisify(execFile)("python3", ["-c", pty, "python3", script, ...args], {
      env: { ...process.env, ...cliEnv() },
    });
    const typescript = await runCliOnTerminal(args, cliEnv());
    expect(python.stdout).toBe(typescript.stdout);
    expect(python.stdout).toContain("More rows follow: --offset 2 (or --all).");
  });
});
