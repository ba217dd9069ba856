import { fork, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import { AppError, type ErrorCode } from "../errors";
import { formatBytes } from "../format";
import { logger } from "../log";
import { UnreadableFileError } from "./checks";
import { childStart, ENGINE_NICE_VARIABLE } from "./child-start";
import type { DatasetEngineSettings } from "./engine";
import { removeKeptDirectories } from "./left-directories";
import type { EngineMessage, EngineReply, EngineRequest } from "./task-runner";

/**
 * One engine process of a pool (./engine-pool.ts): a child process running one DuckDB task at a
 * time, killed past its task's time limit, over its memory cap, or when a cancelled task's
 * interrupt is not heard within CANCEL_KILL_MS.
 */

const MAX_TASKS_PER_PROCESS = 100;
export const IDLE_EXIT_MS = 30_000;
const MEMORY_POLL_MS = 200;
/**
 * How long a cancelled task's process has to answer its interrupt before it is killed: DuckDB looks
 * at the interrupt between chunks, within milliseconds, but one long function call never does, and
 * the contract frees the process within a second of the client leaving.
 */
export const CANCEL_KILL_MS = 750;

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
    readonly reason: "crashed" | "timeout" | "memory" | "cancelled",
    readonly exit: { code: number | null; signal: NodeJS.Signals | null },
    settings: DatasetEngineSettings,
    /** How many processes ended under this task, counting this one. */
    readonly attempts = 1,
  ) {
    super(
      reason === "cancelled"
        ? "The task was cancelled: its client left."
        : reason === "timeout"
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

let lastRequestId = 0;

export class EngineProcess {
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
    killedFor?: "timeout" | "memory" | "cancelled";
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

  /** Runs `request`; `started` is told the task's id (to cancel it). */
  run(
    request: Omit<EngineRequest, "id">,
    attempt: number,
    deadline: number,
    started?: (id: number) => void,
  ): Promise<unknown> {
    clearTimeout(this.idleTimer);
    this.child.ref();
    this.tasksRun++;
    const id = ++lastRequestId;
    const done = new Promise<unknown>((resolve, reject) => {
      this.current = { id, task: request.task, startedAt: Date.now(), resolve, reject, attempt };
    });
    this.child.send({ ...request, id } satisfies EngineRequest);
    started?.(id);
    const timer = setTimeout(() => this.kill("timeout"), Math.max(0, deadline - Date.now()));
    const watch = setInterval(() => void this.checkMemory(), MEMORY_POLL_MS);
    return done.finally(() => {
      clearTimeout(timer);
      clearInterval(watch);
    });
  }

  /**
   * Interrupts the running task `id` (its client left): the process answers it as failed and is
   * free again, or is killed CANCEL_KILL_MS later.
   */
  cancel(id: number): void {
    if (this.current?.id !== id || this.exit) return;
    this.child.send({ cancel: id } satisfies EngineMessage);
    const killer = setTimeout(() => {
      if (this.current?.id === id) this.kill("cancelled");
    }, CANCEL_KILL_MS);
    killer.unref();
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

  private kill(reason: "timeout" | "memory" | "cancelled"): void {
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
