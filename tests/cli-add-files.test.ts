import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin, runAdminJson } from "./helpers/admin";
import { createMigratedDatabase, type TestDatabase } from "./helpers/database";

/** `order:add-file` with many paths (issue #38): one process adds them all, or refuses before adding any. */

let database: TestDatabase;
let workDir: string;
let sql: pg.Client;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createMigratedDatabase("cli_add_files");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "cli-add-files-"));
  env = { DATABASE_URL: database.url, STORAGE_DIR: path.join(workDir, "storage") };
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  await runAdminJson(env, "buyer:create", "--email", "many@example.com");
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const newOrder = async () =>
  (await runAdminJson<{ id: string }>(env, "order:create", "--email", "many@example.com", "--name", "Many")).id;

/** Files with these names and contents in a folder of their own; their paths, in the same order. */
async function files(contents: Record<string, string>): Promise<string[]> {
  const dir = await fs.mkdtemp(path.join(workDir, "files-"));
  return Promise.all(
    Object.entries(contents).map(async ([name, text]) => {
      await fs.writeFile(path.join(dir, name), text);
      return path.join(dir, name);
    }),
  );
}

const fileNames = async (orderId: string) =>
  (await sql.query("SELECT name FROM order_files WHERE order_id = $1 ORDER BY name", [orderId])).rows.map(
    (row: { name: string }) => row.name,
  );

describe("order:add-file with many paths", () => {
  it("adds every file, in the order given, from repeated --path and from several paths after one", async () => {
    const orderId = await newOrder();
    const [a, b, c, notes] = await files({
      "a.csv": "id,v\n1,2\n",
      "b.jsonl": '{"id":1}\n',
      "c.csv": "id\n3\n",
      "notes.txt": "hello\n",
    });
    const added = await runAdminJson<{ files: { id: string; name: string; size: number; sha256: string }[] }>(
      env,
      ...["order:add-file", "--order", orderId, "--path", a!, b!, "--path", c!, notes!],
    );
    expect(added.files.map((file) => [file.name, file.size])).toEqual([
      ["a.csv", 9],
      ["b.jsonl", 9],
      ["c.csv", 5],
      ["notes.txt", 6],
    ]);
    for (const file of added.files)
      expect(file).toMatchObject({
        id: expect.stringMatching(/^fil_/),
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
    expect(await fileNames(orderId)).toEqual(["a.csv", "b.jsonl", "c.csv", "notes.txt"]);
    // The data files are published as tables, each as a single add publishes it.
    const tables = await sql.query("SELECT name FROM order_tables WHERE order_id = $1 ORDER BY name", [orderId]);
    expect(tables.rows.map((row: { name: string }) => row.name)).toEqual(["a", "b", "c"]);
  });

  it("keeps the contract's single object for one path", async () => {
    const orderId = await newOrder();
    const [only] = await files({ "only.csv": "id\n1\n" });
    const added = await runAdminJson(env, "order:add-file", "--order", orderId, "--path", only!);
    expect(added).toMatchObject({
      id: expect.stringMatching(/^fil_/),
      name: "only.csv",
      size: 5,
      sha256: expect.any(String),
    });
    expect(added).not.toHaveProperty("files");
  });

  it.each([
    [
      "a missing path among them",
      (paths: string[]) => ["--path", paths[0]!, path.join(workDir, "gone.csv"), paths[1]!],
      /No file at .*gone\.csv/,
    ],
    [
      "--name with two paths",
      (paths: string[]) => ["--path", paths[0]!, paths[1]!, "--name", "x.csv"],
      /--name: --name names one file/,
    ],
    [
      "--table with two paths",
      (paths: string[]) => ["--path", paths[0]!, "--path", paths[1]!, "--table", "t"],
      /--table: .*single --path/,
    ],
    ["two files of one name", (paths: string[]) => ["--path", paths[0]!, paths[2]!], /would both be named "one\.csv"/],
    ["a plain argument not after --path", (paths: string[]) => [paths[0]!, "--path", paths[1]!], /Unexpected argument/],
  ])("refuses %s before adding any file", async (_case, args, message) => {
    const orderId = await newOrder();
    const [one, two] = await files({ "one.csv": "id\n1\n", "two.csv": "id\n2\n" });
    const [sameName] = await files({ "one.csv": "id\n9\n" });
    const result = await runAdmin(
      env,
      "order:add-file",
      "--order",
      orderId,
      ...args([one!, two!, sameName!]),
      "--json",
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(JSON.parse(result.stdout)).toEqual({
      error: { code: expect.any(String), message: expect.stringMatching(message) },
    });
    expect(await fileNames(orderId)).toEqual([]);
    await expect(fs.readdir(path.join(env.STORAGE_DIR!, orderId))).rejects.toThrow(/ENOENT/);
  });

  it("stops at a file the order refuses, reporting the files added before it", async () => {
    const orderId = await newOrder();
    const [first, taken, last] = await files({ "first.txt": "1\n", "taken.txt": "2\n", "last.txt": "3\n" });
    await runAdminJson(env, "order:add-file", "--order", orderId, "--path", taken!);
    const result = await runAdmin(env, "order:add-file", "--order", orderId, "--path", first!, taken!, last!, "--json");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /taken\.txt was not added \(.*already has a file named "taken\.txt".*\); the 1 file\(s\) before it were/,
    );
    expect(JSON.parse(result.stdout).files.map((file: { name: string }) => file.name)).toEqual(["first.txt"]);
    expect(await fileNames(orderId)).toEqual(["first.txt", "taken.txt"]);
  });
});
