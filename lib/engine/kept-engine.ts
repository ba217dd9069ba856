import { promises as fs, rmSync } from "node:fs";
import path from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { datasetEngineSettings, privateTempRoot } from "./engine";
import type { EngineScope } from "./engine-tasks";
import { keptIdleMs } from "./kept-instances";
import { keptDirectoryPrefix } from "./left-directories";
import { lockSandbox, sandboxSpillMax, type BareEngine } from "./task-engine";

type Kept = { key: string; engine: BareEngine; directory: string };

/**
 * The one DuckDB instance an engine process keeps between buyers' queries of the same files
 * (docs/explore.md, "The sandbox"), so that the next query finds the parts' footers read and the
 * threads started, instead of paying a new instance and a cold first query.
 *
 * Tenant-safe as an instance of its own per query is: its allowed_paths are exactly the files of
 * its key and its configuration is locked, so a query given this instance reads what any query of
 * that key may read, nothing more; each query gets a new connection of its own, closed after it,
 * and with it what the query made (TEMP views and tables, macros, prepared statements, variables:
 * all belong to the connection). It spills into a private directory of its own under the engine's
 * temporary root, removed when it closes, never into a task's directory (removed after the task).
 *
 * One at a time per process, so the process's memory bounds hold: it is closed when another key
 * needs the slot, before a task runs in an instance of its own, when a query on it fails (its time
 * limit, DuckDB's internal error, any refusal), and after `idleMs` without a query.
 */
export class KeptEngine {
  private kept?: Kept;
  private idleClock?: NodeJS.Timeout;

  constructor(private readonly idleMs = keptIdleMs()) {}

  /** Whether instances are kept at all (`DATASET_QUERY_KEEP_SECONDS` 0: never). */
  get enabled(): boolean {
    return this.idleMs > 0;
  }

  /**
   * The key of the instance a task may run in: its exact readable files (narrowed, resolved) and
   * every setting that may differ by task (time limit, spill bound) or by process (memory, threads).
   */
  static keyOf(scope: EngineScope, readable: string[]): string {
    const { memoryLimit, threads } = datasetEngineSettings();
    return JSON.stringify({
      files: [...new Set(readable)].sort(),
      spillMax: sandboxSpillMax(scope),
      timeLimitMs: scope.timeLimitMs ?? null,
      memoryLimit,
      threads,
    });
  }

  /** The directory the kept instance spills into, if one is kept (tests look there). */
  get directory(): string | undefined {
    return this.kept?.directory;
  }

  /**
   * A new connection, for one query, on the instance kept for `key`. If the slot holds another, that
   * is closed first and the instance of `key` made from `bare()`: its private directory, `readable`
   * and nothing else allowed, the Parquet metadata cache on, then locked. `bare()` is closed if that fails.
   */
  async connect(
    key: string,
    scope: EngineScope,
    readable: string[],
    bare: () => Promise<BareEngine>,
  ): Promise<DuckDBConnection> {
    this.hold();
    if (this.kept?.key !== key) {
      this.close();
      this.kept = await keptInstance(key, scope, readable, await bare());
    }
    return this.kept.engine.instance.connect();
  }

  /** A task begins: the idle clock stops, so the instance is not closed under it. */
  hold(): void {
    clearTimeout(this.idleClock);
    this.idleClock = undefined;
  }

  /** A task ended: the kept instance is closed if no query comes within idleMs. */
  idle(): void {
    this.hold();
    if (!this.kept) return;
    this.idleClock = setTimeout(() => this.close(), this.idleMs);
    // The process lives by its IPC channel, not by this clock.
    this.idleClock.unref();
  }

  /** Closes the kept instance, if any, and removes its directory (its spill). */
  close(): void {
    this.hold();
    const kept = this.kept;
    this.kept = undefined;
    if (!kept) return;
    try {
      kept.engine.close();
    } finally {
      rmSync(kept.directory, { recursive: true, force: true });
    }
  }
}

async function keptInstance(key: string, scope: EngineScope, readable: string[], engine: BareEngine): Promise<Kept> {
  let directory: string | undefined;
  try {
    // mkdtemp makes it 0700, under the root checked to be this user's own.
    directory = await fs.mkdtemp(path.join(await privateTempRoot(), keptDirectoryPrefix(process.pid)));
    await lockSandbox(engine.connection, {
      directory,
      spillMax: sandboxSpillMax(scope),
      readable,
      metadataCache: true,
    });
    return { key, engine, directory };
  } catch (error) {
    engine.close();
    if (directory) await fs.rm(directory, { recursive: true, force: true });
    throw error;
  }
}
