import { promises as fs } from "node:fs";

/**
 * Process faults for the fault suite: a crash (SIGKILL) or a frozen host (SIGSTOP, then SIGCONT)
 * hits a whole process tree, not one pid. An app instance is the launcher (scripts/serve.ts) and
 * its HTTP server child; a PostgreSQL cluster is the postmaster and one process per connection.
 * Linux only: the tree is read from /proc.
 */

/**
 * Sends `signal` to `pid` and every descendant; returns the pids signalled. The root goes first, so
 * a stopped postmaster forks no new backend that would escape the pause; the descendants listed
 * before it was signalled are kept, since a killed parent's children are adopted by another.
 */
export async function signalProcessTree(pid: number, signal: NodeJS.Signals): Promise<number[]> {
  const before = await descendants(pid);
  sendSignal(pid, signal);
  const after = await descendants(pid);
  const members = [...new Set([...before, ...after])];
  for (const member of members) sendSignal(member, signal);
  return [pid, ...members];
}

/**
 * `pid` and its descendants, listed now: a test that means to crash them at a precise instant (while
 * a request is on the wire) lists them first, then signalAll(...) is a few plain system calls.
 */
export async function processTree(pid: number): Promise<number[]> {
  return [pid, ...(await descendants(pid))];
}

/** Sends `signal` to each pid; one already gone is skipped. */
export function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) sendSignal(pid, signal);
}

/**
 * The engine processes below `pid` (a server's launcher): those running lib/engine/engine-child, from source
 * (`engine-child.ts`, under tsx) or built (`engine-child.mjs`, beside the built server: scripts/built.mjs).
 */
export async function engineProcessesOf(pid: number): Promise<number[]> {
  const engines: number[] = [];
  for (const child of await descendants(pid)) {
    const command = await fs.readFile(`/proc/${child}/cmdline`, "utf8").catch(() => "");
    if (/engine-child\.(ts|mjs)\0/.test(command)) engines.push(child);
  }
  return engines;
}

/**
 * The engine process below `pid` that has `file` open (DuckDB reading it for a task), with the bytes
 * it has read so far (`rchar` of /proc/<pid>/io: DuckDB reads with pread, which moves no file
 * offset to watch); undefined when none has. An idle engine process holds no data file open.
 */
export async function engineProcessReading(
  pid: number,
  file: string,
): Promise<{ pid: number; bytesRead: number } | undefined> {
  const target = await fs.realpath(file);
  for (const engine of await engineProcessesOf(pid)) {
    const fds = await fs.readdir(`/proc/${engine}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      if ((await fs.readlink(`/proc/${engine}/fd/${fd}`).catch(() => "")) !== target) continue;
      const io = await fs.readFile(`/proc/${engine}/io`, "utf8").catch(() => "");
      return { pid: engine, bytesRead: Number(/^rchar: (\d+)$/m.exec(io)?.[1] ?? 0) };
    }
  }
  return undefined;
}

/** Every descendant of `pid` (children, their children, ...). */
export async function descendants(pid: number): Promise<number[]> {
  const parents = await parentPids();
  const found: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    const parent = queue.shift()!;
    for (const [child, parentPid] of parents) {
      if (parentPid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/** Whether `pid` runs (a zombie, dead but not yet reaped by its parent, does not). */
async function isRunning(pid: number): Promise<boolean> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  return stat !== undefined && statFields(stat).state !== "Z";
}

/** Waits until none of `pids` runs; false if some still do after `withinMs`. */
export async function waitForExit(pids: number[], withinMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const running = await Promise.all(pids.map(isRunning));
    if (!running.includes(true)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

function sendSignal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

async function parentPids(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  for (const entry of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, "utf8").catch(() => undefined);
    if (stat !== undefined) parents.set(Number(entry), statFields(stat).parentPid);
  }
  return parents;
}

/** `/proc/<pid>/stat` is "pid (command) state ppid ...", and the command may hold spaces and ")". */
function statFields(stat: string): { state: string; parentPid: number } {
  const [state, parentPid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: state!, parentPid: Number(parentPid) };
}
