import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineReply, EngineRequest } from "./task-runner";
import { taskRunner } from "./task-runner";

/** The engine process's tasks: the answer goes out before the instance closes, one instance at a time, none reused. */

let directory: string;
beforeAll(async () => {
  directory = await fs.mkdtemp(path.join(os.tmpdir(), "task-runner-"));
});
afterAll(() => fs.rm(directory, { recursive: true, force: true }));

const request = (id: number, task: string): EngineRequest =>
  ({ id, task, input: null, scope: { directory, readable: [] } }) as unknown as EngineRequest;

/** Whether a task's connection still answers (closed: DuckDB refuses it). */
const answers = (connection: DuckDBConnection) =>
  connection.runAndReadAll("SELECT 1").then(
    () => true,
    () => false,
  );

describe("the engine process's task runner", () => {
  it("sends the answer while the instance is still open, closes it before the next task", async () => {
    const connections: DuckDBConnection[] = [];
    const events: string[] = [];
    const tasks = {
      async remember(connection: DuckDBConnection) {
        if (connections.length > 0) events.push(`previous open at next task: ${await answers(connections.at(-1)!)}`);
        connections.push(connection);
        await connection.run("CREATE TEMP TABLE left_behind AS SELECT 1 AS one");
        return connections.length;
      },
      async seesLeftBehind(connection: DuckDBConnection) {
        return connection.runAndReadAll("SELECT * FROM left_behind").then(
          () => true,
          () => false,
        );
      },
    };
    const replies: EngineReply[] = [];
    const run = taskRunner(tasks, async (reply) => {
      replies.push(reply);
      events.push(`open at answer: ${await answers(connections.at(-1)!)}`);
    });
    await Promise.all([run(request(1, "remember")), run(request(2, "remember")), run(request(3, "seesLeftBehind"))]);
    expect(replies).toEqual([
      { id: 1, ok: true, value: 1 },
      { id: 2, ok: true, value: 2 },
      { id: 3, ok: true, value: false },
    ]);
    expect(events.slice(0, 3)).toEqual([
      "open at answer: true",
      "previous open at next task: false",
      "open at answer: true",
    ]);
    expect(await answers(connections[1]!)).toBe(false);
  });

  it("answers a failing task with its error and still closes its instance", async () => {
    let kept: DuckDBConnection | undefined;
    const replies: EngineReply[] = [];
    const run = taskRunner(
      {
        async fails(connection: DuckDBConnection) {
          kept = connection;
          await connection.run("SELECT * FROM no_such_table");
        },
      },
      async (reply) => {
        replies.push(reply);
      },
    );
    await run(request(7, "fails"));
    expect(replies).toMatchObject([{ id: 7, ok: false, error: { message: expect.stringMatching(/no_such_table/) } }]);
    expect(await answers(kept!)).toBe(false);
  });

  it("gives each task, on the instance made ahead, its spill directory, no external access and a lock", async () => {
    const replies: EngineReply[] = [];
    const run = taskRunner(
      {
        async settings(connection: DuckDBConnection) {
          const names = ["temp_directory", "enable_external_access", "lock_configuration", "TimeZone"];
          const read = await connection.runAndReadAll(
            `SELECT ${names.map((name) => `current_setting('${name}')::VARCHAR`).join(", ")}`,
          );
          return read.getRowsJson()[0];
        },
      },
      async (reply) => {
        replies.push(reply);
      },
    );
    await run(request(5, "settings"));
    await new Promise((resolve) => setTimeout(resolve, 100)); // the next instance is made meanwhile
    await run({ ...request(6, "settings"), scope: { directory: path.join(directory, "sub"), readable: [] } });
    expect(replies).toEqual([
      { id: 5, ok: true, value: [path.join(directory, "spill"), "false", "true", "UTC"] },
      { id: 6, ok: true, value: [path.join(directory, "sub", "spill"), "false", "true", "UTC"] },
    ]);
  });

  it("lets a task narrow the files it reads before the lock, never widen them", async () => {
    const handed = [path.join(directory, "a.parquet"), path.join(directory, "b.parquet")];
    const replies: EngineReply[] = [];
    const run = taskRunner(
      {
        async allowed(connection: DuckDBConnection) {
          const setting = await connection.runAndReadAll("SELECT current_setting('allowed_paths')");
          return setting.getRowsJson()[0]![0];
        },
      },
      async (reply) => {
        replies.push(reply);
      },
      { allowed: async () => [handed[1]!, "/etc/passwd"] },
    );
    await run({ ...request(8, "allowed"), scope: { directory, readable: handed } });
    expect(replies).toEqual([{ id: 8, ok: true, value: [handed[1]] }]);
  });
});
