import { fork } from "node:child_process";
import { existsSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childStart } from "./child-start";
import { sqlString } from "./engine";
import { KeptEngine } from "./kept-engine";
import { keptDirectoryPrefix, removeKeptDirectories } from "./left-directories";
import { taskRunner, type EngineReply, type EngineRequest } from "./task-runner";

/**
 * The instance an engine process keeps between queries of the same files: a query on it sees
 * nothing an earlier one made, reads only its key's files, and it is closed (its directory removed)
 * on another key, before a task of its own instance, on failure, past the time limit and when idle.
 */

let directory: string;
/** The tasks' own directory (allowed to them), apart from the files they are handed. */
let taskDirectory: string;
let root: string;
let fileA: string;
let fileB: string;
const savedTempDir = process.env.DATASET_TEMP_DIR;

beforeAll(async () => {
  directory = await fs.mkdtemp(path.join(os.tmpdir(), "kept-engine-"));
  root = path.join(directory, "engine");
  taskDirectory = path.join(directory, "task");
  // Private, as the server makes a task's directory (the engine refuses any other).
  await fs.mkdir(taskDirectory, { mode: 0o700 });
  process.env.DATASET_TEMP_DIR = root;
  fileA = path.join(directory, "a.parquet");
  fileB = path.join(directory, "b.parquet");
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  await connection.run(`COPY (SELECT 'a' AS part, range AS id FROM range(10)) TO ${sqlString(fileA)}`);
  await connection.run(`COPY (SELECT 'b' AS part, range AS id FROM range(5)) TO ${sqlString(fileB)}`);
  connection.closeSync();
  instance.closeSync();
});
afterAll(async () => {
  if (savedTempDir === undefined) delete process.env.DATASET_TEMP_DIR;
  else process.env.DATASET_TEMP_DIR = savedTempDir;
  await fs.rm(directory, { recursive: true, force: true });
});

const request = (id: number, task: string, readable: string[], input: unknown = null): EngineRequest =>
  ({ id, task, input, scope: { directory: taskDirectory, readable, timeLimitMs: 2_000 } }) as unknown as EngineRequest;

const setting = async (connection: DuckDBConnection, name: string) =>
  String((await connection.runAndReadAll(`SELECT current_setting('${name}')::VARCHAR`)).getRowsJson()[0]![0]);

/** Whether `sql` runs on `connection` (false: DuckDB refused it). */
const runs = (connection: DuckDBConnection, sql: string) =>
  connection.run(sql).then(
    () => true,
    () => false,
  );

const TASKS = {
  /** Leaves behind what a query could make: a view, a table, a macro, a prepared statement, a variable. */
  async leave(connection: DuckDBConnection) {
    await connection.run(`CREATE TEMP VIEW products AS SELECT * FROM read_parquet(${sqlString(fileA)})`);
    await connection.run("CREATE TEMP TABLE left_table AS SELECT 1 AS one");
    await connection.run("CREATE TEMP MACRO left_macro(x) AS x + 1");
    await connection.run("PREPARE left_statement AS SELECT 1");
    await connection.run("SET VARIABLE left_variable = 'seen'");
    return setting(connection, "temp_directory");
  },
  async look(connection: DuckDBConnection) {
    const variable = await connection.runAndReadAll("SELECT getvariable('left_variable')");
    return {
      spill: await setting(connection, "temp_directory"),
      view: await runs(connection, "SELECT * FROM products"),
      table: await runs(connection, "SELECT * FROM left_table"),
      macro: await runs(connection, "SELECT left_macro(1)"),
      statement: await runs(connection, "EXECUTE left_statement"),
      variable: variable.getRowsJson()[0]![0],
      reads: (await connection.runAndReadAll(`SELECT count(*) FROM read_parquet(${sqlString(fileA)})`)).getRowsJson(),
      sandbox: await Promise.all(
        [
          "enable_external_access",
          "lock_configuration",
          "parquet_metadata_cache",
          "TimeZone",
          "max_temp_directory_size",
        ].map((name) => setting(connection, name)),
      ),
      set: await runs(connection, "SET enable_external_access = true"),
    };
  },
  /** The parts of `input.file`, or DuckDB's refusal. */
  async read(connection: DuckDBConnection, input: unknown) {
    const file = (input as { file: string }).file;
    const read = await connection.runAndReadAll(`SELECT DISTINCT part FROM read_parquet(${sqlString(file)})`).then(
      (result) => result.getRowsJson()[0]![0],
      (error: Error) => error.message.split("\n")[0],
    );
    return { spill: await setting(connection, "temp_directory"), read };
  },
  async fails(connection: DuckDBConnection) {
    await connection.run("SELECT * FROM no_such_table");
  },
  async endless(connection: DuckDBConnection) {
    await connection.run("SELECT count(*) FROM range(1000000000000)");
  },
  async ownInstance(connection: DuckDBConnection) {
    return setting(connection, "temp_directory");
  },
  async fromParse(connection: DuckDBConnection | undefined, input: unknown) {
    if ((input as { refuse?: boolean }).refuse) throw new Error("refused on its parse");
    return connection === undefined ? "no connection" : "a connection";
  },
};
const KEPT = new Set(["leave", "look", "read", "fails", "endless"]);

/** A runner of TASKS and its replies' values (errors as their messages). */
function runner(idleMs = 60_000) {
  const kept = new KeptEngine(idleMs);
  const replies: EngineReply[] = [];
  const run = taskRunner(
    TASKS as Parameters<typeof taskRunner>[0],
    async (reply) => {
      replies.push(reply);
    },
    {},
    { tasks: KEPT, engine: kept },
    new Set(["fromParse"]),
  );
  const ask = async (...args: Parameters<typeof request>) => {
    await run(request(...args));
    const reply = replies.at(-1)!;
    return reply.ok ? reply.value : { error: reply.error.message };
  };
  return { kept, ask };
}

describe("an instance kept between queries of the same files", () => {
  it("shows a query nothing an earlier query on it made, and keeps its sandbox locked", async () => {
    const { kept, ask } = runner();
    const spill = await ask(1, "leave", [fileA]);
    const keptDirectory = kept.directory!;
    // Its own private directory under the engine's root, not the task's.
    expect(path.dirname(keptDirectory)).toBe(root);
    expect(path.basename(keptDirectory).startsWith(keptDirectoryPrefix(process.pid))).toBe(true);
    expect(spill).toBe(path.join(keptDirectory, "spill"));
    expect(await ask(2, "look", [fileA])).toEqual({
      spill,
      view: false,
      table: false,
      macro: false,
      statement: false,
      variable: null,
      reads: [["10"]],
      // Set on the connection that locked it, held on every query's: the settings are the instance's.
      sandbox: ["false", "true", "true", "UTC", "953.6 MiB"],
      set: false,
    });
    // The same instance: nothing else was made for the second query.
    expect(kept.directory).toBe(keptDirectory);
    kept.close();
    expect(existsSync(keptDirectory)).toBe(false);
  });

  it("stays open through a task answered from its parse alone, refused or not", async () => {
    const { kept, ask } = runner();
    await ask(1, "leave", [fileA]);
    const keptDirectory = kept.directory!;
    expect(await ask(2, "fromParse", [], {})).toBe("no connection");
    expect(await ask(3, "fromParse", [], { refuse: true })).toEqual({ error: "refused on its parse" });
    expect(kept.directory).toBe(keptDirectory);
    expect(((await ask(4, "look", [fileA])) as { spill: string }).spill).toBe(path.join(keptDirectory, "spill"));
    kept.close();
  });

  it("is another instance for another set of files, which cannot read the first set's", async () => {
    const { kept, ask } = runner();
    const first = (await ask(1, "read", [fileA], { file: fileA })) as { spill: string; read: string };
    expect(first.read).toBe("a");
    const firstDirectory = kept.directory!;
    const other = (await ask(2, "read", [fileB], { file: fileA })) as { spill: string; read: string };
    expect(other.read).toMatch(/Permission Error: Cannot access file/);
    expect(other.spill).not.toBe(first.spill);
    // One kept at a time: the first instance was closed when the second came.
    expect(kept.directory).not.toBe(firstDirectory);
    expect(existsSync(firstDirectory)).toBe(false);
    // A superset is another key too: the instance of {a, b} is not the one of {a}.
    await ask(3, "read", [fileA], { file: fileA });
    const onlyA = kept.directory;
    expect(await ask(4, "read", [fileA, fileB], { file: fileB })).toMatchObject({ read: "b" });
    expect(kept.directory).not.toBe(onlyA);
    kept.close();
  });

  it("is closed when a query on it fails or runs past its time limit", async () => {
    const { kept, ask } = runner();
    await ask(1, "look", [fileA]);
    const before = kept.directory!;
    expect(await ask(2, "fails", [fileA])).toEqual({ error: expect.stringMatching(/no_such_table/) });
    expect(kept.directory).toBeUndefined();
    expect(existsSync(before)).toBe(false);
    await ask(3, "look", [fileA]);
    const again = kept.directory!;
    expect(again).not.toBe(before);
    expect(await ask(4, "endless", [fileA])).toEqual({ error: expect.stringMatching(/more than 2 seconds/) });
    expect(kept.directory).toBeUndefined();
    expect(existsSync(again)).toBe(false);
  });

  it("is closed before a task runs in an instance of its own, and when idle", async () => {
    const { kept, ask } = runner(300);
    await ask(1, "look", [fileA]);
    const first = kept.directory!;
    // Not a kept task: its spill is in its task's directory, and the kept instance is gone first.
    expect(await ask(2, "ownInstance", [fileA])).toBe(path.join(taskDirectory, "spill"));
    expect(existsSync(first)).toBe(false);
    // Nothing readable: an instance of its own too.
    await ask(3, "look", [fileA]);
    expect(await ask(4, "read", [], { file: fileA })).toMatchObject({ read: expect.stringMatching(/Permission/) });
    expect(kept.directory).toBeUndefined();
    await ask(5, "look", [fileA]);
    const idle = kept.directory!;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(kept.directory).toBeUndefined();
    expect(existsSync(idle)).toBe(false);
  });

  it("is never made with DATASET_QUERY_KEEP_SECONDS=0", async () => {
    const { kept, ask } = runner(0);
    expect(await ask(1, "read", [fileA], { file: fileA })).toMatchObject({ spill: path.join(taskDirectory, "spill") });
    expect(kept.directory).toBeUndefined();
  });

  it("is removed by its engine process when the parent goes away (killed, it cannot remove it)", async () => {
    const start = childStart();
    const child = fork(start.entry, [], {
      execArgv: start.execArgv,
      env: { ...process.env, DATASET_TEMP_DIR: root, DATASET_QUERY_KEEP_SECONDS: "60" },
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const replied = new Promise<EngineReply>((resolve) => child.once("message", resolve));
    const input = {
      files: [{ path: fileA, name: "a" }],
      columns: [
        { name: "part", type: "VARCHAR" },
        { name: "id", type: "BIGINT" },
      ],
      select: ["id"],
      orderBy: [],
      fileOrder: true,
      limit: 3,
      offset: 0,
      bytes: 1024 * 1024,
    };
    child.send(request(1, "tableRows", [fileA], input));
    expect(await replied).toMatchObject({ ok: true, value: { rowsJson: "[[0],[1],[2]]", cut: "rows" } });
    const keptOfChild = async () =>
      (await fs.readdir(root)).filter((name) => name.startsWith(keptDirectoryPrefix(child.pid!)));
    expect(await keptOfChild()).toHaveLength(1);
    child.disconnect();
    await exited;
    expect(await keptOfChild()).toEqual([]);
  });

  it("leaves directories of an ended process that the pool removes", async () => {
    await fs.mkdir(path.join(root, `${keptDirectoryPrefix(999_999_999)}x`, "spill"), { recursive: true });
    await fs.mkdir(path.join(root, `${keptDirectoryPrefix(9_999_999)}y`), { recursive: true });
    await removeKeptDirectories(root, 999_999_999);
    expect((await fs.readdir(root)).filter((name) => name.startsWith("kept-"))).toEqual([
      `${keptDirectoryPrefix(9_999_999)}y`,
    ]);
  });
});
