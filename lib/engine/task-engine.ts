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
export type BareEngine = { instance: DuckDBInstance; connection: DuckDBConnection; close: () => void };

/**
 * A new instance with the settings every task shares (about 20 ms, bench:explore): made ahead of
 * the next task by the engine process (./task-runner.ts), and given its scope by openTaskEngine
 * (or ./kept-engine.ts) when that task arrives. Nothing runs in it before: DuckDB refuses
 * allowed_paths once external access is off, so a task's files and the lock can only come with the task.
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
  return { instance, connection, close };
}

/**
 * withTaskEngine's instance (`bare`, or a new one), configured and locked, and its closing, left to
 * the caller: the engine process (./task-runner.ts) closes it after the task's answer is sent. Used
 * by one task only. `readable` (the scope's files by default) may be fewer files than the scope
 * hands over, never more: only files of `scope.readable` are kept (readableWithin).
 */
export async function openTaskEngine(
  scope: EngineScope,
  readable: string[] = scope.readable,
  bare?: BareEngine,
): Promise<BareEngine> {
  const directory = path.resolve(scope.directory);
  const engine = bare ?? (await bareEngine());
  try {
    await privateTaskDirectory(directory);
    // A task run again after its process was ended from outside (./engine-pool.ts) starts without its spill.
    await fs.rm(path.join(directory, "spill"), { recursive: true, force: true });
    await lockSandbox(engine.connection, {
      directory,
      spillMax: sandboxSpillMax(scope),
      readable: readableWithin(scope, readable),
    });
    return engine;
  } catch (error) {
    engine.close();
    throw error;
  }
}

/**
 * The task's directory, private: made here (0700) when the server left that to the engine (a
 * buyer's query: ./engine.ts withTaskDirectoryPath), else the one the server made (mkdtemp), checked.
 */
async function privateTaskDirectory(directory: string): Promise<void> {
  await fs.mkdir(directory, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw error;
  });
  const made = await fs.lstat(directory);
  if (!made.isDirectory() || (made.mode & 0o077) !== 0) {
    throw new Error(`The task's directory ${directory} is not a private directory (mode 700).`);
  }
}

/** The files of `asked` that `scope` hands over, resolved: a task may narrow what it reads, never widen it. */
export function readableWithin(scope: EngineScope, asked: string[]): string[] {
  const handed = new Set(scope.readable.map((file) => path.resolve(file)));
  return [...new Set(asked.map((file) => path.resolve(file)))].filter((file) => handed.has(file));
}

/** What a task may spill: a buyer's query (one with a time limit) has its own, smaller bound. */
export function sandboxSpillMax(scope: EngineScope): string {
  return scope.timeLimitMs ? process.env.DATASET_QUERY_SPILL_MAX || "1GB" : datasetEngineSettings().spillMax;
}

/**
 * The sandbox, set on an instance nothing of a buyer's has run in: it spills into `directory`
 * (bounded), reads and writes only there and `readable`, then external access is off and the
 * configuration locked (no SET, RESET or PRAGMA takes effect after). `metadataCache` keeps the
 * Parquet footers read, for an instance kept between queries of the same files (./kept-engine.ts).
 */
export async function lockSandbox(
  connection: DuckDBConnection,
  sandbox: { directory: string; spillMax: string; readable: string[]; metadataCache?: boolean },
): Promise<void> {
  const { directory, spillMax, readable } = sandbox;
  await connection.run(`SET temp_directory = ${sqlString(path.join(directory, "spill"))}`);
  // Bounded, so one task cannot fill the disk the database and the other tasks share. Set here:
  // given to DuckDBInstance.create, DuckDB 1.5 reports it but does not enforce it.
  await connection.run(`SET max_temp_directory_size = ${sqlString(spillMax)}`);
  await connection.run(`SET allowed_directories = [${sqlString(`${directory}/`)}]`);
  await connection.run(`SET allowed_paths = [${readable.map(sqlString).join(", ")}]`);
  // GLOBAL: a plain SET of this one would hold for this connection only, not the queries' own.
  if (sandbox.metadataCache) await connection.run("SET GLOBAL parquet_metadata_cache = true");
  await connection.run("SET enable_external_access = false");
  await connection.run("SET lock_configuration = true");
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
