import { fork, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import { AppError, type ErrorCode } from "../errors";
import { formatBytes } from "../format";
import { logger } from "../log";
import { dropProcessSingleton, processSingleton } from "../singleton";
import { UnreadableFileError } from "./checks";
import { childStart, ENGINE_NICE_VARIABLE } from "./child-start";
import { datasetEngineSettings, type DatasetEngineSettings } from "./engine";
import { removeKeptDirectories } from "./left-directories";
import type { EngineReply, EngineRequest } from "./task-runner";
import type { EngineScope, EngineTaskInput, EngineTaskName, EngineTaskOutput } from "./engine-tasks";

/**
 * The engine processes the worker and the CLI feed with DuckDB tasks (./engine-tasks.ts): a small
 * pool of child processes (`DATASET_ENGINE_PROCESSES`, default 2: the worker profiles that many files
 * at once, and tasks beyond it wait their turn), one task each at a time. A process is killed when its task runs past
 * the time limit or its resident memory passes the cap (./engine.ts), and when DuckDB crashes on a
 * file, only that process ends: the task fails with EngineProcessEnded, which names the reason
 * and the signal, and the next task gets a new process. A process ended from outside (a signal
 * that is neither a crash of its own nor our kill: the system's out-of-memory killer, an operator)
 * says nothing about the data, so its task runs again in a new process, ENGINE_TASK_ATTEMPTS times
 * in all, RETRY_DELAY_MS apart and within the one time limit, before it fails. Every end of a
 * process during a task is logged with its exit code or signal. A process is also replaced after MAX_TASKS_PER_PROCESS tasks
 * (DuckDB's allocator keeps memory it freed) and leaves after IDLE_EXIT_MS without work.
 */

const MAX_TASKS_PER_PROCESS = 100;
const IDLE_EXIT_MS = 30_000;
const MEMORY_POLL_MS = 200;
/** Tries of a task whose process was ended from outside; the pause before the next grows with each. */
export const ENGINE_TASK_ATTEMPTS = 3;
const RETRY_DELAY_MS = 1_000;

/** Signals of a process that crashed by itself (a fault in DuckDB's code, met on this file's content). */
const CRASH_SIGNALS = new Set(["SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP"]);

const ENGINE_PROCESS_ENDED = Symbol.for("dataset-access:EngineProcessEnded");

/** Why an engine process ended during a task; the message is a sentence for the buyer whose file it was. */
export class EngineProcessEnded extends Error {
  /** One whichever copy of this module made it (the query pool is shared by the launcher's and Next.js's: AppError). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && ENGINE_PROCESS_ENDED in value;
  }

  readonly [ENGINE_PROCESS_ENDED] = true;

  constructor(
    readonly reason: "crashed" | "timeout" | "memory",
    readonly exit: { code: number | null; signal: NodeJS.Signals | null },
    settings: DatasetEngineSettings,
    /** How many processes ended under this task, counting this one. */
    readonly attempts = 1,
  ) {
    super(
      reason === "timeout"
        ? `Reading the file took longer than the ${Math.round(settings.taskTimeoutMs / 60_000)}-minute limit: it was not read further.`
        : reason === "memory"
          ? `Reading the file needed more than ${formatBytes(settings.processMemoryMaxBytes)} of memory, more than the data engine may use (a single value or row is too large): it was not read further.`
          : CRASH_SIGNALS.has(exit.signal ?? "")
            ? `The data engine stopped while reading the file (it ended with ${exit.signal}): the file's structure is beyond what it can read, for example values nested too deeply. It was not read further.`
            : `The data engine was ended while reading the file (${exit.signal ?? `exit code ${exit.code}`}${attempts > 1 ? `, ${attempts} times in a row` : ""}), for example by the system for lack of memory. It was not read further; it can be tried again.`,
    );
  }

  /** Ended by a signal from outside (not a crash on the data, not our own kill): worth running again. */
  get endedFromOutside(): boolean {
    return this.reason === "crashed" && this.exit.signal !== null && !CRASH_SIGNALS.has(this.exit.signal);
  }
}

/**
 * Runs `task` in an engine process, confined to `scope`. A task's own failure comes back as the
 * error it threw (UnreadableFileError for a file that is not what its name says, else an Error with
 * DuckDB's message); an engine process that ended mid-task, as EngineProcessEnded.
 */
export function runEngineTask<Name extends EngineTaskName>(
  task: Name,
  input: EngineTaskInput<Name>,
  scope: EngineScope,
): Promise<EngineTaskOutput<Name>> {
  return pool().run({ task, input, scope }) as Promise<EngineTaskOutput<Name>>;
}

/** Ends every engine process (the worker's shutdown, the CLI before it exits). */
export async function closeEnginePool(): Promise<void> {
  await dropProcessSingleton<EnginePool>("datasets:engine-pool")?.close();
}

/** How many engine processes run at most (`DATASET_ENGINE_PROCESSES`, default 2). */
export function datasetEngineProcesses(): number {
  const size = Number(process.env.DATASET_ENGINE_PROCESSES || 2);
  if (!Number.isInteger(size) || size < 1) {
    throw new Error(
      `DATASET_ENGINE_PROCESSES must be a whole number of at least 1, got "${process.env.DATASET_ENGINE_PROCESSES}".`,
    );
  }
  return size;
}

const pool = () =>
  processSingleton("datasets:engine-pool", () => new EnginePool(datasetEngineSettings(), datasetEngineProcesses()));

type Work = {
  request: Omit<EngineRequest, "id">;
  /** Whose work it is, for the per-account bound (queries only). */
  account?: string;
  /** This task's time limit instead of the engine's (queries). */
  timeLimitMs?: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  attempt: number;
  /** When the time limit ends, from its first try: tries again share it (within the queue's expiry). */
  deadline?: number;
};

export class EnginePool {
  private readonly idle: EngineProcess[] = [];
  private readonly waiting: Work[] = [];
  private busy = 0;
  private closed = false;
  /** Busy processes per account (queries). */
  private readonly busyFor = new Map<string, number>();

  constructor(
    private readonly settings: DatasetEngineSettings,
    private readonly size: number,
    private readonly bounds: { perAccount: number; maxWaiting: number; nice?: number } = {
      perAccount: Infinity,
      maxWaiting: Infinity,
    },
  ) {}

  run(request: Work["request"], options: { account?: string; timeLimitMs?: number } = {}): Promise<unknown> {
    if (this.waiting.length >= this.bounds.maxWaiting) {
      return Promise.reject(
        new AppError("service_unavailable", "The data engine is busy with other queries: try again in a few seconds.", {
          "Retry-After": "5",
        }),
      );
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, resolve, reject, attempt: 1, ...options });
      this.next();
    });
  }

  /** The first waiting work whose account is under its bound, taken out of the queue. */
  private takeNext(): Work | undefined {
    const index = this.waiting.findIndex(
      (work) => work.account === undefined || (this.busyFor.get(work.account) ?? 0) < this.bounds.perAccount,
    );
    return index < 0 ? undefined : this.waiting.splice(index, 1)[0];
  }

  private next(): void {
    while (this.waiting.length > 0 && this.busy < this.size) {
      const work = this.takeNext();
      if (!work) return;
      const account = work.account;
      if (account !== undefined) this.busyFor.set(account, (this.busyFor.get(account) ?? 0) + 1);
      // An idle process that ended meanwhile has already left `idle` (forget).
      const engine =
        this.idle.pop() ?? new EngineProcess(this.settings, this.bounds.nice, (ended) => this.forget(ended));
      this.busy++;
      work.deadline ??= Date.now() + (work.timeLimitMs ?? this.settings.taskTimeoutMs);
      engine
        .run(work.request, work.attempt, work.deadline)
        .then(work.resolve, (error: unknown) => this.failed(work, error))
        .finally(() => {
          this.busy--;
          if (account !== undefined) {
            const left = (this.busyFor.get(account) ?? 1) - 1;
            if (left > 0) this.busyFor.set(account, left);
            else this.busyFor.delete(account);
          }
          if (engine.reusable) {
            this.idle.push(engine);
            engine.idleUntilExit(IDLE_EXIT_MS);
          } else {
            engine.stop();
          }
          this.next();
        });
    }
  }

  /** A task's failure: again in a new process if its process was ended from outside, tries left. */
  private failed(work: Work, error: unknown): void {
    if (!(error instanceof EngineProcessEnded && error.endedFromOutside) || work.attempt >= ENGINE_TASK_ATTEMPTS) {
      work.reject(error);
      return;
    }
    logger().warn(
      { task: work.request.task, attempt: work.attempt, signal: error.exit.signal },
      `A ${work.request.task} task runs again: its engine process was ended from outside (${error.exit.signal}).`,
    );
    setTimeout(() => {
      if (this.closed || Date.now() >= work.deadline!) return work.reject(error);
      this.waiting.unshift({ ...work, attempt: work.attempt + 1 });
      this.next();
    }, RETRY_DELAY_MS * work.attempt);
  }

  private forget(engine: EngineProcess): void {
    const index = this.idle.indexOf(engine);
    if (index >= 0) this.idle.splice(index, 1);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.waiting.splice(0).forEach((work) => work.reject(new Error("The data engine is shutting down.")));
    await Promise.all(this.idle.splice(0).map((engine) => engine.stop()));
  }
}

let lastRequestId = 0;

class EngineProcess {
  private readonly child: ChildProcess;
  private exit?: { code: number | null; signal: NodeJS.Signals | null };
  private readonly exited: Promise<void>;
  private current?: {
    id: number;
    task: string;
    startedAt: number;
    resolve: (value: unknown) => void;
    reject: (error: unknown) => void;
    attempt: number;
    killedFor?: "timeout" | "memory";
  };
  private tasksRun = 0;
  private idleTimer?: NodeJS.Timeout;

  constructor(
    private readonly settings: DatasetEngineSettings,
    nice: number | undefined,
    private readonly onExit: (engine: EngineProcess) => void,
  ) {
    const start = childStart();
    this.child = fork(start.entry, [], {
      execArgv: [...start.execArgv, "--max-old-space-size=1024"],
      env: nice === undefined ? process.env : { ...process.env, [ENGINE_NICE_VARIABLE]: String(nice) },
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child.on("message", (reply: EngineReply) => this.settle(reply));
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.ended(code, signal);
        resolve();
      });
    });
    // A process that cannot even start (no resources) ends as one that crashed.
    this.child.on("error", (error) => logger().error({ err: error }, "dataset engine process error"));
  }

  get reusable(): boolean {
    return !this.exit && this.tasksRun < MAX_TASKS_PER_PROCESS;
  }

  run(request: Omit<EngineRequest, "id">, attempt: number, deadline: number): Promise<unknown> {
    clearTimeout(this.idleTimer);
    this.child.ref();
    this.tasksRun++;
    const id = ++lastRequestId;
    const done = new Promise<unknown>((resolve, reject) => {
      this.current = { id, task: request.task, startedAt: Date.now(), resolve, reject, attempt };
    });
    this.child.send({ ...request, id } satisfies EngineRequest);
    const timer = setTimeout(() => this.kill("timeout"), Math.max(0, deadline - Date.now()));
    const watch = setInterval(() => void this.checkMemory(), MEMORY_POLL_MS);
    return done.finally(() => {
      clearTimeout(timer);
      clearInterval(watch);
    });
  }

  /** Leaves after `ms` without a task; meanwhile it does not keep the parent alive. */
  idleUntilExit(ms: number): void {
    this.child.unref();
    (this.child.channel as { unref?: () => void } | undefined)?.unref?.();
    this.idleTimer = setTimeout(() => void this.stop(), ms);
    this.idleTimer.unref();
  }

  /** Ends the process: asked to leave (it exits when its channel closes), killed if it does not. */
  async stop(): Promise<void> {
    clearTimeout(this.idleTimer);
    if (this.exit) return;
    // Waited for: an idle process no longer holds the event loop, so its exit would go unseen.
    this.child.ref();
    if (this.child.connected) this.child.disconnect();
    const killer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
    killer.unref();
    await this.exited;
    clearTimeout(killer);
  }

  private kill(reason: "timeout" | "memory"): void {
    if (!this.current || this.exit) return;
    this.current.killedFor ??= reason;
    this.child.kill("SIGKILL");
  }

  /** Resident memory from /proc (Linux); elsewhere only the time limit applies. */
  private async checkMemory(): Promise<void> {
    const status = await fs.readFile(`/proc/${this.child.pid}/status`, "utf8").catch(() => "");
    const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
    if (rssKb * 1024 > this.settings.processMemoryMaxBytes) this.kill("memory");
  }

  private settle(reply: EngineReply): void {
    const current = this.current;
    if (!current || reply.id !== current.id) return;
    this.current = undefined;
    logger().debug({ task: current.task, ok: reply.ok, duration_ms: Date.now() - current.startedAt }, "engine task");
    if (reply.ok) current.resolve(reply.value);
    else
      current.reject(
        reply.error.code
          ? new AppError(reply.error.code as ErrorCode, reply.error.message)
          : reply.error.unreadable
            ? new UnreadableFileError(reply.error.message)
            : new Error(reply.error.message),
      );
  }

  private ended(code: number | null, signal: NodeJS.Signals | null): void {
    this.exit = { code, signal };
    this.onExit(this);
    // A process killed (or exiting) with a kept instance leaves its directory behind: its spill.
    if (this.child.pid !== undefined) {
      removeKeptDirectories(this.settings.tempDir, this.child.pid).catch((error: unknown) =>
        logger().warn({ err: error }, "An ended engine process's kept instance directory could not be removed."),
      );
    }
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    const failure = new EngineProcessEnded(current.killedFor ?? "crashed", this.exit, this.settings, current.attempt);
    logger().error(
      {
        engine_pid: this.child.pid,
        task: current.task,
        exit_code: code,
        signal,
        reason: failure.reason,
        duration_ms: Date.now() - current.startedAt,
      },
      `A dataset engine process ended during a ${current.task} task (${signal ?? `exit code ${code}`}, ${failure.reason}).`,
    );
    current.reject(failure);
  }
}
