import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { addOrderFile } from "../../lib/operator/orders";
import { orderSchema } from "../../lib/schemas/api";
import { publishTable } from "../../lib/tables/publish";
import { runAdmin, runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { partFile, productsCsv, products, publicationDone, withoutQualityChecks } from "./helpers";

/**
 * Tables and versions (contract Part 4) on the production server and its worker, on the storage
 * driver the run uses: publications become versions when their parts are profiled and checked, in
 * publishing order, without gaps; the order's files and tables say what the buyer has now; bad
 * input is refused before anything is stored, or fails the publication with a sentence while the
 * current version stays served.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let buyerEmail: string;
let orderId: string;
let cliEnv: Record<string, string | undefined>;

beforeAll(async () => {
  env = await createTestEnvironment("tables");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "tables-"));
  const account = await buyer("tables");
  buyerEmail = account.email;
  orderId = (await order(account.id)).id;
  key = (await apiKey(account.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  cliEnv = { DATABASE_URL: env.database.url, STORAGE_DIR: env.storageDir, DATASET_TEMP_DIR: path.join(workDir, "cli") };
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

async function getOrder(id = orderId) {
  const response = await fetch(`${server.url}/api/v1/orders/${id}`, { headers: { Authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  return orderSchema.parse(await response.json());
}

const stream = (content: string) => ({ stream: Readable.from([Buffer.from(content)]) });

async function publish(
  table: string,
  parts: Record<string, string>,
  options: { mode?: "snapshot" | "append"; key?: string[] } = {},
) {
  const published = await publishTable({
    orderId,
    table,
    ...options,
    parts: Object.entries(parts).map(([name, content]) => ({ name, source: stream(content) })),
  });
  return { ...published, done: await publicationDone(published.publication) };
}

describe("order:add-file", { timeout: 240_000 }, () => {
  it("publishes a data file as version 1 of a snapshot table named after it; binary files belong to no table", async () => {
    const { id } = await order((await db().user.findFirstOrThrow({ where: { email: buyerEmail } })).id);
    const added = [];
    for (const name of ["Products.2026-11.csv", "products.json", "2026 Sales.CSV", "archive.bin"]) {
      added.push(
        await addOrderFile({
          orderId: id,
          name,
          source: Readable.from([Buffer.from(name.endsWith(".json") ? '[{"a":1}]' : "a,b\n1,2\n")]),
        }),
      );
    }
    expect(added.map((file) => file.table)).toEqual(["products", "products_2", "t_2026_sales", null]);
    for (const file of added.slice(0, 3)) {
      const publication = await db().orderFile.findUniqueOrThrow({
        where: { id: file.id },
        select: { publicationId: true },
      });
      expect((await publicationDone(publication.publicationId!)).status).toBe("ready");
    }
    const read = await getOrder(id);
    expect(read.tables.map((table) => [table.name, table.version, table.mode, table.key, table.rows])).toEqual([
      ["products", 1, "snapshot", null, 1],
      ["products_2", 1, "snapshot", null, 1],
      ["t_2026_sales", 1, "snapshot", null, 1],
    ]);
    expect(read.files.map((file) => [file.name, file.table])).toEqual([
      ["Products.2026-11.csv", { name: "products", version: 1 }],
      ["products.json", { name: "products_2", version: 1 }],
      ["2026 Sales.CSV", { name: "t_2026_sales", version: 1 }],
      ["archive.bin", null],
    ]);
  });
});

// Each version waits for three jobs in a row (profile, Parquet, publication): minutes on a loaded machine.
describe("table:publish", { timeout: 240_000 }, () => {
  it("stores the parts, lists them once they are version 1, profiled and checked", async () => {
    const first = await partFile(workDir, "catalog-v1-a.csv", productsCsv(products(1, 50)));
    const second = await partFile(workDir, "catalog-v1-b.csv", productsCsv(products(51, 50)));
    const answer = await runAdminJson<{ table: string; publication: string; files: { id: string; name: string }[] }>(
      cliEnv,
      "table:publish",
      "--order",
      orderId,
      "--table",
      "catalog",
      "--path",
      first,
      "--path",
      second,
      "--key",
      "id",
    );
    expect(answer).toMatchObject({ table: "catalog", publication: expect.stringMatching(/^pub_/) });
    expect(answer.files.map((file) => file.name)).toEqual(["catalog-v1-a.csv", "catalog-v1-b.csv"]);
    // Unseen until they are a version (contract Part 8), then listed.
    const listedNow = async () =>
      (await getOrder()).files
        .filter((file) => file.table?.name === "catalog")
        .map((file) => file.id)
        .sort();
    const status = async () =>
      (await db().tablePublication.findUniqueOrThrow({ where: { id: answer.publication } })).status;
    // Read in this order: a publication still not ready after the listing was not ready during it.
    const before = await listedNow();
    if ((await status()) !== "ready") expect(before).toEqual([]);
    expect((await publicationDone(answer.publication)).status).toBe("ready");
    expect(await listedNow()).toEqual(answer.files.map((file) => file.id).sort());
    const catalog = (await getOrder()).tables.find((table) => table.name === "catalog")!;
    expect(catalog).toMatchObject({ mode: "snapshot", key: ["id"], version: 1, rows: 100 });
    expect(catalog.columns?.map((column) => column.name)).toEqual(["id", "name", "price"]);
    const history = await runAdminJson<{ versions: unknown[]; publications: unknown[] }>(
      cliEnv,
      "table:versions",
      "--order",
      orderId,
      "--table",
      "catalog",
    );
    expect(history.versions).toEqual([
      {
        version: 1,
        created_at: expect.any(String),
        rows: 100,
        changes: { inserted: 100, updated: 0, deleted: 0 },
        quality: { status: "passed", reason: null, checks: [] },
      },
    ]);
    // The publication's quality report (Part 6): a first version has nothing to compare with.
    expect(history.publications).toEqual([
      {
        id: answer.publication,
        status: "ready",
        error: null,
        created_at: expect.any(String),
        files: answer.files.map(({ id, name }) => ({ id, name, size: expect.any(Number) })),
        report: expect.objectContaining({ rows: 100, previous_rows: null, added_columns: [] }),
      },
    ]);
  });

  it("makes a snapshot's next version: the old parts leave the files list and stay downloadable until pruned", async () => {
    const v1 = await publish("shelf", { "shelf-v1.csv": productsCsv(products(1, 10)) }, { key: ["id"] });
    const v2 = await publish("shelf", { "shelf-v2.csv": productsCsv(products(1, 12)) });
    expect([v1.done.version, v2.done.version]).toEqual([1, 2]);
    const read = await getOrder();
    expect(
      read.files.filter((file) => file.table?.name === "shelf").map((file) => [file.name, file.table?.version]),
    ).toEqual([["shelf-v2.csv", 2]]);
    expect(read.tables.find((table) => table.name === "shelf")).toMatchObject({ version: 2, rows: 12 });
    const oldPart = v1.files[0]!.id;
    const download = await fetch(`${server.url}/api/v1/orders/${orderId}/files/${oldPart}`, {
      headers: { Authorization: `Bearer ${key}` },
      redirect: "manual",
    });
    expect(download.status).toBe(302);

    const pruned = await runAdminJson<{ pruned: number[]; kept: number[]; files_deleted: number }>(
      cliEnv,
      "table:prune",
      "--order",
      orderId,
      "--table",
      "shelf",
      "--keep",
      "1",
    );
    expect(pruned).toMatchObject({ pruned: [1], kept: [2], files_deleted: expect.any(Number) });
    expect(await db().orderFile.count({ where: { id: oldPart } })).toBe(0);
    const gone = await fetch(`${server.url}/api/v1/orders/${orderId}/files/${oldPart}`, {
      headers: { Authorization: `Bearer ${key}` },
      redirect: "manual",
    });
    expect(gone.status).toBe(404);
    const history = await runAdminJson<{ versions: { version: number }[] }>(
      cliEnv,
      "table:versions",
      "--order",
      orderId,
      "--table",
      "shelf",
    );
    expect(history.versions.map((version) => version.version)).toEqual([2, 1]);
  });

  it("adds an append table's rows version by version; every version's parts stay listed", async () => {
    await publish("events", { "events-1.csv": productsCsv(products(1, 5)) }, { mode: "append", key: ["id"] });
    // An append version may repeat a key of an earlier one; within the table, never null.
    const second = await publish("events", { "events-2.csv": productsCsv(products(5, 5)) });
    expect(second.done).toMatchObject({ status: "ready", version: 2 });
    const read = await getOrder();
    expect(read.tables.find((table) => table.name === "events")).toMatchObject({
      mode: "append",
      version: 2,
      rows: 10,
    });
    expect(read.files.filter((file) => file.table?.name === "events").map((file) => file.table?.version)).toEqual([
      1, 2,
    ]);
  });

  it("makes publications of one table versions in publishing order, without gaps, when published at once", async () => {
    const published = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        publishTable({
          orderId,
          table: "burst",
          // The same rows each time: whichever order they get, no version is held by its quality checks.
          parts: [{ name: `burst-${n}.csv`, source: stream(productsCsv(products(1, 5))) }],
        }),
      ),
    );
    const done = await Promise.all(published.map((one) => publicationDone(one.publication)));
    expect(done.every((one) => one.status === "ready")).toBe(true);
    const bySeq = [...done].sort((a, b) => a.seq! - b.seq!);
    expect(bySeq.map((one) => one.version)).toEqual([1, 2, 3, 4]);
    const versions = await db().tableVersion.findMany({
      where: { table: { orderId, name: "burst" } },
      orderBy: { version: "asc" },
      select: { version: true },
    });
    expect(versions.map((version) => version.version)).toEqual([1, 2, 3, 4]);
  });

  it.each([
    [
      "parts with different columns",
      { "mixed-a.csv": "id,name,price\n1,a,1\n", "mixed-b.csv": "id,title,price\n2,b,2\n" },
      /Part "mixed-b\.csv" has other columns than part "mixed-a\.csv": its column 2 is "title", not "name"/,
    ],
    [
      "a part whose data cannot be read",
      { "ragged-a.csv": "id,name,price\n1,a,1\n", "ragged-b.csv": "id,name,price\n1,2\n3,4,5,6\n" },
      /Part "ragged-b\.csv" could not be read: /,
    ],
    [
      "a null key",
      { "nulls-a.csv": productsCsv([...products(1, 3), { id: null, name: "x", price: 1 }]) },
      /Part "nulls-a\.csv" has a row whose key \(id\) is null/,
    ],
    [
      "a key twice",
      { "dupes-a.csv": productsCsv(products(1, 3)), "dupes-b.csv": productsCsv(products(3, 3)) },
      /The key \(id\) is not unique: id = 3 occurs 2 times/,
    ],
    [
      "a column named as one of the change feed's own",
      { "reserved-a.csv": "id,name,price,_Change_Type\n1,a,1.5,insert\n" },
      /^Column "_Change_Type" has a name the change feed reserves for its own columns \(_change_type, _commit_version, _commit_timestamp\): rename it/,
    ],
  ])("fails a publication with %s, naming what is wrong; the table keeps its version", async (_case, parts, reason) => {
    const table = `bad_${Object.keys(parts)[0]!.split("-")[0]}`;
    const good = await publish(table, { [`${table}-good.csv`]: productsCsv(products(1, 4)) }, { key: ["id"] });
    expect(good.done.status).toBe("ready");
    const bad = await publish(table, parts as Record<string, string>);
    expect(bad.done.status).toBe("failed");
    expect(bad.done.error).toMatch(reason);
    const read = await getOrder();
    expect(read.tables.find((one) => one.name === table)).toMatchObject({ version: 1, rows: 4 });
    // The worker keeps working: the next publication of the table becomes version 2.
    const next = await publish(table, { [`${table}-next.csv`]: productsCsv(products(1, 5)) });
    expect(next.done).toMatchObject({ status: "ready", version: 2 });
  });

  it("checks the key of a table with a data column named filename", async () => {
    const first = await publish(
      "named",
      { "named-a.csv": "id,filename,price\n1,a.csv,1\n2,b.csv,2\n" },
      { key: ["id"] },
    );
    expect(first.done).toMatchObject({ status: "ready", version: 1 });
    const nullKey = await publish("named", {
      "named-b.csv": "id,filename,price\n3,c.csv,3\n",
      "named-c.csv": "id,filename,price\n4,d.csv,4\n,e.csv,5\n",
    });
    expect(nullKey.done.error).toMatch(/^Part "named-c\.csv" has a row whose key \(id\) is null/);
  });

  it("publishes a failed publication's part names again, replacing its parts", async () => {
    const parts = { "again-1.csv": productsCsv(products(1, 3)), "again-2.csv": "id,name,price\n4,2\n5,a,6,7\n" };
    const failed = await publish("again", parts, { key: ["id"] });
    expect(failed.done.status).toBe("failed");
    const again = await publish("again", { ...parts, "again-2.csv": productsCsv(products(4, 2)) });
    expect(again.done).toMatchObject({ status: "ready", version: 1 });
    const listed = (await getOrder()).files.filter((file) => file.table?.name === "again");
    expect(listed.map((file) => [file.name, file.id, file.table?.version])).toEqual(
      again.files.map((file) => [file.name, file.id, 1]),
    );
    expect(await db().orderFile.count({ where: { id: { in: failed.files.map((file) => file.id) } } })).toBe(0);
    const history = await runAdminJson<{ publications: { id: string; status: string; error: string | null }[] }>(
      cliEnv,
      "table:versions",
      "--order",
      orderId,
      "--table",
      "again",
    );
    expect(history.publications.map((one) => [one.id, one.status, one.error])).toEqual([
      [again.publication, "ready", null],
      [failed.publication, "failed", expect.stringMatching(/^Part "again-2\.csv" could not be read/)],
    ]);
  });

  it.each([
    ["a renamed column", "id,title,price\n1,a,1\n", /Column "name" of version 1 is missing \(renamed or dropped\)/],
    ["a retyped column", "id,name,price\n1,a,cheap\n", /Column "price" was DOUBLE in version 1 and is VARCHAR here/],
    ["a moved column", "id,price,name\n1,1.5,a\n", /Column "name" moved from position 2 in version 1/],
    ["a key column missing", "sku,name,price\n1,a,1.5\n", /The key column "id" is not a column of this publication/],
  ])("fails a later version with %s against the previous one", async (_case, content, reason) => {
    const table = `evolve_${_case.split(" ")[1]}`;
    await publish(table, { [`${table}-v1.csv`]: productsCsv(products(1, 3)) }, { key: ["id"] });
    const bad = await publish(table, { [`${table}-v2.csv`]: content });
    expect(bad.done.status).toBe("failed");
    expect(bad.done.error).toMatch(reason);
  });

  it("takes a version that adds columns after the previous ones", async () => {
    await publish("widen", { "widen-v1.csv": productsCsv(products(1, 3)) });
    await withoutQualityChecks(orderId, "widen"); // v2 keeps one row of three: the gate would hold it
    const wider = await publish("widen", { "widen-v2.csv": "id,name,price,stock\n1,a,1.5,3\n" });
    expect(wider.done).toMatchObject({ status: "ready", version: 2 });
    const table = (await getOrder()).tables.find((one) => one.name === "widen")!;
    expect(table.columns?.map((column) => column.name)).toEqual(["id", "name", "price", "stock"]);
  });

  it.each([
    ["a table name that breaks the rule", ["--table", "Products!"], /is not a valid table name/],
    [
      "a part name already taken",
      ["--table", "taken", "--path", "TAKEN"],
      /already has a file named "catalog-v1-a\.csv"/,
    ],
    ["a binary part", ["--table", "binary", "--path", "BIN"], /binary files belong to no table/],
    [
      "another mode than the table's",
      ["--table", "catalog", "--mode", "append", "--path", "NEW"],
      /is a snapshot table/,
    ],
    [
      "another key than the table's",
      ["--table", "catalog", "--key", "name", "--path", "NEW"],
      /Table catalog's key is id/,
    ],
    ["no part", ["--table", "empty"], /--path/],
  ])("refuses %s before storing anything", async (_case, args, message) => {
    const paths: Record<string, string> = {
      TAKEN: await partFile(workDir, "catalog-v1-a.csv", "id,name,price\n1,a,1\n"),
      BIN: await partFile(workDir, "photo.bin", "\u0000\u0001"),
      NEW: await partFile(workDir, `fresh-${_case.length}.csv`, "id,name,price\n1,a,1\n"),
    };
    const argv = args.map((arg) => paths[arg] ?? arg);
    if (!argv.includes("--path") && _case !== "no part") argv.push("--path", paths.NEW!);
    const filesBefore = await db().orderFile.count();
    const tablesBefore = await db().orderTable.count();
    const result = await runAdmin(cliEnv, "table:publish", "--order", orderId, ...argv);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(await db().orderFile.count()).toBe(filesBefore);
    expect(await db().orderTable.count()).toBe(tablesBefore);
  });
});
