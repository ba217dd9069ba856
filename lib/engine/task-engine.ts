import { promises as fs } from "node:fs";
import path from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { AppError } from "../errors";
import { datasetEngineSettings, sqlString } from "./engine";
import type { EngineScope } from "./engine-tasks";

/**
 * A DuckDB instance for one task, bounded (memory_limit, threads, spilling into the task's
 * directory up to max_temp_directory_size) and confined: it reads and writes only `scope`. Its
 * session zone is UTC, so timestamps with a zone read as UTC. Closed when the task ends.
 */
export async function withTaskEngine<T>(
  scope: EngineScope,
  work: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  const engine = await openTaskEngine(scope);
  try {
    return await runInTime(engine.connection, scope, work);
  } finally {
    engine.close();
  }
}

/** A DuckDB instance and its connection, bounded in memory and threads, nothing yet readable or locked. */
export type BareEngine = { connection: DuckDBConnection; close: () => void };

/**
 * A new instance with the settings every task shares (about 20 ms, bench:explore): made ahead of
 * the next task by the engine process (./task-runner.ts), and given its scope by openTaskEngine
 * when that task arrives. Nothing runs in it before: DuckDB refuses allowed_paths once external
 * access is off, so a task's files and the lock can only come with the task.
 */
export async function bareEngine(): Promise<BareEngine> {
  const { memoryLimit, threads } = datasetEngineSettings();
  const instance = await DuckDBInstance.create(":memory:", {
    memory_limit: memoryLimit,
    threads: String(threads),
    // Files are read only as the app hands them over: no extension downloads.
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    allow_community_extensions: "false",
  });
  const connection = await instance.connect();
  const close = () => {
    connection.closeSync();
    instance.closeSync();
  };
  try {
    await connection.run("SET GLOBAL TimeZone = 'UTC'");
  } catch (error) {
    close();
    throw error;
  }
  return { connection, close };
}

/**
 * withTaskEngine's instance (`bare`, or a new one), configured and locked, and its closing, left to
 * the caller: the engine process (./task-runner.ts) closes it after the task's answer is sent. Used
 * by one task only. `readableOf`, run before anything is readable or locked, may narrow the files
 * the task reads (never widen: only files of `scope.readable` are kept); it runs no SQL of the buyer's.
 */
export async function openTaskEngine(
  scope: EngineScope,
  readableOf?: (connection: DuckDBConnection) => Promise<string[]>,
  bare?: BareEngine,
): Promise<BareEngine> {
  const spillMax = scope.timeLimitMs ? process.env.DATASET_QUERY_SPILL_MAX || "1GB" : datasetEngineSettings().spillMax;
  const directory = path.resolve(scope.directory);
  const spill = path.join(directory, "spill");
  const engine = bare ?? (await bareEngine());
  const { connection } = engine;
  try {
    // A task run again after its process was ended from outside (./engine-pool.ts) starts without its spill.
    await fs.rm(spill, { recursive: true, force: true });
    await connection.run(`SET temp_directory = ${sqlString(spill)}`);
    // Bounded, so one task cannot fill the disk the database and the other tasks share. Set here:
    // given to DuckDBInstance.create, DuckDB 1.5 reports it but does not enforce it.
    await connection.run(`SET max_temp_directory_size = ${sqlString(spillMax)}`);
    await connection.run(`SET allowed_directories = [${sqlString(`${directory}/`)}]`);
    const handed = new Set(scope.readable.map((file) => path.resolve(file)));
    const readable = readableOf ? (await readableOf(connection)).map((file) => path.resolve(file)) : [...handed];
    await connection.run(
      `SET allowed_paths = [${readable
        .filter((file) => handed.has(file))
        .map(sqlString)
        .join(", ")}]`,
    );
    await connection.run("SET enable_external_access = false");
    await connection.run("SET lock_configuration = true");
    return engine;
  } catch (error) {
    engine.close();
    throw error;
  }
}

/** `work` on the task's connection, interrupted past the scope's time limit (a buyer's query). */
export async function runInTime<T>(
  connection: DuckDBConnection,
  scope: EngineScope,
  work: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  const limitMs = scope.timeLimitMs;
  if (!limitMs) return await work(connection);
  let interrupted = false;
  const interrupt = setTimeout(() => {
    interrupted = true;
    connection.interrupt();
  }, limitMs);
  try {
    return await work(connection);
  } catch (error) {
    // The limit said as it is set (DATASET_QUERY_SECONDS), not as the contract's default.
    if (!interrupted) throw error;
    throw new AppError(
      "query_timeout",
      `The query needed more than ${limitMs / 1000} seconds of engine time: narrow it (a filter, fewer columns, a smaller limit).`,
    );
  } finally {
    clearTimeout(interrupt);
  }
}
