import { promises as fs } from "node:fs";
import path from "node:path";
import { keptDirectoryPrefix } from "./left-directories";

/**
 * What the server's side knows of the DuckDB instances an engine process keeps between queries of
 * the same files (./kept-engine.ts): how long one waits for its next query, and its private
 * directory, named by the process's id under the engine's temporary root, so that the pool
 * (./engine-pool.ts) removes those of a process that ended without closing them (killed past its
 * time limit or memory cap). No DuckDB here: the server's own process imports it.
 */

/**
 * How long a kept instance waits for its next query before it is closed
 * (`DATASET_QUERY_KEEP_SECONDS`, default 60; 0: none is kept, every query gets an instance of its own).
 */
export function keptIdleMs(env: Record<string, string | undefined> = process.env): number {
  const seconds = Number(env.DATASET_QUERY_KEEP_SECONDS || 60);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new Error(
      `DATASET_QUERY_KEEP_SECONDS must be a number of seconds, 0 or more, got "${env.DATASET_QUERY_KEEP_SECONDS}".`,
    );
  }
  return seconds * 1000;
}

/** Removes every kept instance's directory of process `pid` under `root`; a missing root is nothing to remove. */
export async function removeKeptDirectories(root: string, pid: number): Promise<void> {
  const names = await fs.readdir(root).catch(() => [] as string[]);
  const prefix = keptDirectoryPrefix(pid);
  await Promise.all(
    names
      .filter((name) => name.startsWith(prefix))
      .map((name) => fs.rm(path.join(root, name), { recursive: true, force: true })),
  );
}
