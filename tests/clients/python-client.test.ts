import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { datasetJobsDone, mixedFiles } from "../datasets/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { publishTable } from "../../lib/tables/publish";
import { products, productsCsv, publicationDone, withoutQualityChecks } from "../tables/helpers";

/**
 * clients/python/dataset_access.py, tested by its own unittest suite against the production server
 * (and its job worker, which profiles data files) on a real PostgreSQL: this loads the accounts it
 * expects. The suite runs with a python3 that has pandas (apt-get install python3-pandas), and its
 * read_pandas test of the message for a missing pandas runs one that has not.
 */
let env: TestEnvironment;
let server: TestServer;
let expectations: Record<string, unknown>;
let key: string;
let workDir: string;
let python: { withPandas: string; withoutPandas: string[] };

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

const hasPandas = (argv: string[]) =>
  promisify(execFile)(argv[0]!, [...argv.slice(1), "-c", "import pandas"]).then(
    () => true,
    () => false,
  );

/**
 * A python3 with pandas, and a Python 3 without: the first of the machine's python3 that lacks it
 * (another installation), else the same one with `-S`: no site-packages, where pandas is installed.
 */
async function pythons(): Promise<typeof python> {
  const candidates = ["python3", "/usr/bin/python3"];
  const found = await Promise.all(candidates.map((candidate) => hasPandas([candidate])));
  const withPandas = candidates[found.indexOf(true)];
  if (!withPandas) throw new Error("No python3 with pandas here: apt-get install -y python3-pandas");
  const without = candidates[found.indexOf(false)];
  const withoutPandas = without ? [without] : [withPandas, "-S"];
  if (await hasPandas(withoutPandas)) throw new Error(`${withoutPandas.join(" ")} has pandas too`);
  return { withPandas, withoutPandas };
}

beforeAll(async () => {
  env = await createTestEnvironment("py_client");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "py-client-"));
  python = await pythons();
  const account = await buyer("python-client");
  key = (await apiKey(account.id)).secret;
  const big = Buffer.from(Uint8Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 7 + (i >> 10)) & 0xff));
  const delivered: Record<string, Record<string, string>> = {};
  const ids: string[] = [];
  for (const [name, files] of [
    ["first", { "a.csv": Buffer.from("a,b\n1,2\n"), "b.jsonl": Buffer.from('{"x":1}\n') }],
    ["second", { "big.bin": big }],
    // One row under the header: a table of no rows is held by the quality gate (row_count_zero, #40),
    // and buyers see nothing of a held publication, its part included.
    ["third", { "c.csv": Buffer.from("c\n1\n") }],
  ] as const) {
    const created = await order(account.id, { name, files });
    ids.push(created.id);
    delivered[created.id] = Object.fromEntries(Object.entries(files).map(([file, data]) => [file, sha256(data)]));
  }
  const refunded = await order(account.id, {
    name: "refunded",
    status: "refunded",
    files: { "r.csv": Buffer.from("r\n") },
  });
  const unfinished = await order(account.id, { name: "unfinished", status: "unfinished" });
  ids.push(refunded.id, unfinished.id);
  const tableAccount = await buyer("python-tables");
  const tableKey = (await apiKey(tableAccount.id)).secret;
  // A second account with one order of data files, for --format and read_pandas.
  const dataAccount = await buyer("python-formats");
  const data = await order(dataAccount.id, { name: "data", files: await mixedFiles(workDir) });
  expectations = {
    order_ids: ids,
    delivered,
    big: [Object.keys(delivered)[1], "big.bin"],
    refunded_id: refunded.id,
    formats: { key: (await apiKey(dataAccount.id)).secret, order_id: data.id },
    python_without_pandas: python.withoutPandas,
  };
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      RATE_LIMIT_EXEMPT_BUYERS: `${account.id},${dataAccount.id},${tableAccount.id}`,
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
    },
  });
  // The worker profiles every data file and makes its Parquet rendition.
  await datasetJobsDone();
  // A third account's keyed snapshot table refreshed twice, for tables(), read_table_pandas and
  // read_changes_pandas: 50 products; 10 repriced, 41-50 gone, 51-60 new; 5 more.
  const tables = await order(tableAccount.id, { name: "refreshed" });
  const versions = [
    products(1, 50),
    [...products(1, 40, (id) => (id <= 10 ? id * 2 : id * 1.5)), ...products(51, 10)],
    [...products(1, 40, (id) => (id <= 10 ? id * 2 : id * 1.5)), ...products(51, 15)],
  ];
  for (const [index, rows] of versions.entries()) {
    const published = await publishTable({
      orderId: tables.id,
      table: "prices",
      key: ["id"],
      parts: [
        { name: `prices-${index + 1}a.csv`, source: { stream: Readable.from([productsCsv(rows.slice(0, 20))]) } },
        { name: `prices-${index + 1}b.csv`, source: { stream: Readable.from([productsCsv(rows.slice(20))]) } },
      ],
    });
    expect(await publicationDone(published.publication, 240_000)).toMatchObject({ status: "ready" });
    // Version 2 deletes a fifth of the rows on purpose, which the quality gate (#40) would hold.
    if (index === 0) await withoutQualityChecks(tables.id, "prices");
  }
  expectations.tables = {
    key: tableKey,
    order_id: tables.id,
    table: "prices",
    rows: versions.map((rows) => rows.length),
    changes: [
      { inserted: 50, updated: 0, deleted: 0 },
      { inserted: 10, updated: 10, deleted: 10 },
      { inserted: 5, updated: 0, deleted: 0 },
    ],
  };
}, 600_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

it("is served by the server for download, as the getting-started page says", async () => {
  const answer = await fetch(`${server.url}/clients/dataset_access.py`);
  expect(answer.status).toBe(200);
  expect(answer.headers.get("content-disposition")).toBe('attachment; filename="dataset_access.py"');
  expect(await answer.text()).toBe(await fs.readFile(path.resolve("clients/python/dataset_access.py"), "utf8"));
});

it("passes its unittest suite against the server", { timeout: 180_000 }, async () => {
  const run = await promisify(execFile)(python.withPandas, ["-m", "unittest", "-v", "test_dataset_access"], {
    cwd: path.resolve("clients/python"),
    env: {
      ...process.env,
      DATASET_ACCESS_URL: server.url,
      DATASET_ACCESS_KEY: key,
      DATASET_ACCESS_TEST_EXPECT: JSON.stringify(expectations),
    },
  }).catch((error: { stdout: string; stderr: string }) => ({ ...error, failed: true }));
  const output = `${run.stdout}\n${run.stderr}`;
  expect("failed" in run, output).toBe(false);
  // Every test ran (none skipped for want of a server).
  expect(output).toMatch(/Ran 27 tests/);
  expect(output).not.toMatch(/skipped/);
});
