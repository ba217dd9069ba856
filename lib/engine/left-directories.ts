import { promises as fs } from "node:fs";
import path from "node:path";

/**
 * The private directories of engine work under the temporary root (DATASET_TEMP_DIR) carry the id
 * of the process that made them: `work-<pid>-...` (a task's, ./engine.ts withTempDir) and
 * `kept-<pid>-...` (an engine process's kept instance, ./kept-engine.ts). Each is removed by its
 * process when its work ends; one that ended without (killed, the machine stopped) leaves its
 * spill, copied S3 objects and subset files behind. The server and the worker remove those at
 * start (./left-work.ts). A process id is only meaningful on its machine: the root is one
 * machine's, never shared between containers (docs/operations.md).
 */

export const workDirectoryPrefix = (pid: number) => `work-${pid}-`;
export const keptDirectoryPrefix = (pid: number) => `kept-${pid}-`;

const MADE_BY = /^(?:work|kept)-(\d+)-/;

/**
 * Removes the directories under `root` whose process is gone; answers their names. Called once as
 * a process starts, before it makes any: its own id on a directory is then a process before it
 * (ids are reused, one in a container's restart especially), so that one goes too. A live process's
 * (or one of another user: EPERM) is left; so is any name of another shape.
 */
export function removeLeftDirectories(root: string, ownPid = process.pid): Promise<string[]> {
  return removeDirectoriesUnder(root, (name) => {
    const made = MADE_BY.exec(name);
    if (!made) return false;
    const pid = Number(made[1]);
    return pid === ownPid || !processLives(pid);
  });
}

/** Removes every kept instance's directory of process `pid` under `root` (the pool, once that process ended). */
export async function removeKeptDirectories(root: string, pid: number): Promise<void> {
  const prefix = keptDirectoryPrefix(pid);
  await removeDirectoriesUnder(root, (name) => name.startsWith(prefix));
}

/** Removes the directories under `root` whose name is `wanted`; answers their names. A missing root has none. */
async function removeDirectoriesUnder(root: string, wanted: (name: string) => boolean): Promise<string[]> {
  const names = (await fs.readdir(root).catch(() => [] as string[])).filter(wanted);
  await Promise.all(names.map((name) => fs.rm(path.join(root, name), { recursive: true, force: true })));
  return names;
}

function processLives(pid: number): boolean {
  try {
    // Signal 0: nothing is sent, only whether the process exists is checked.
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
