import { AppError } from "../errors";
import { logger } from "../log";
import { countEngineQuery, reportEngineQueries } from "../metrics";
import { dropProcessSingleton, processSingleton } from "../singleton";
import { AccountQueues } from "./account-queues";
import { datasetEngineSettings, type DatasetEngineSettings } from "./engine";
import { EngineProcess, EngineProcessEnded, IDLE_EXIT_MS } from "./engine-process";
import type { EngineRequest } from "./task-runner";
import type { EngineScope, EngineTaskInput, EngineTaskName, EngineTaskOutput } from "./engine-tasks";

export { EngineProcessEnded } from "./engine-process";

/**
 * The engine processes the worker and the CLI feed with DuckDB tasks (./engine-tasks.ts): a small
 * pool of child processes (`DATASET_ENGINE_PROCESSES`, default 2: the worker profiles that many files
 * at once, and tasks beyond it wait their turn), one task each at a time (./engine-process.ts). A
 * process is killed when its task runs past the time limit or its resident memory passes the cap
 * (./engine.ts), and when DuckDB crashes on a file, only that process ends: the task fails with
 * EngineProcessEnded, which names the reason and the signal, and the next task gets a new process.
 * A process ended from outside (a signal that is neither a crash of its own nor our kill: the
 * system's out-of-memory killer, an operator) says nothing about the data, so its task runs again
 * in a new process, ENGINE_TASK_ATTEMPTS times in all, RETRY_DELAY_MS apart and within the one time
 * limit, before it fails. Buyers' queries (./query-pool.ts) are admitted per account (`bounds`):
 * waiting ones are taken account by account in turn (./account-queues.ts), a caller whose client
 * left leaves the queue or has its running task interrupted.
 */

/** Tries of a task whose process was ended from outside; the pause before the next grows with each. */
export const ENGINE_TASK_ATTEMPTS = 3;
const RETRY_DELAY_MS = 1_000;

/** The pool's own work, which has no account: one queue of its own in the turn. */
const NO_ACCOUNT = "";

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

/** Where a buyer's query came in, for the metrics. */
export type QueryDoor = "rows" | "sql" | "subset" | "query_page" | "mcp";

/**
 * How a query's request goes: the door it came in by; `signal` aborts when its client leaves;
 * `answered` settles once its answer is written out (the account's running place is held until
 * then, so a slow reader delays only its own account's next query).
 */
export type QueryVia = { door: QueryDoor; signal?: AbortSignal; answered?: Promise<unknown> };
/** Whose a query is (its account) and how it came. */
export type QueryCaller = QueryVia & { account: string };

type RunOptions = { caller?: QueryCaller; timeLimitMs?: number };

type Work = RunOptions & {
  request: Omit<EngineRequest, "id">;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  attempt: number;
  /** When the time limit ends, from its first try: tries again share it (within the queue's expiry). */
  deadline?: number;
  /** Its client left: answered as cancelled, never run again. */
  cancelled?: boolean;
  /** Its process was ended from outside: it runs again after a pause. */
  retrying?: boolean;
  /** While running: its process and its task's id there (to cancel it). */
  running?: { engine: EngineProcess; id?: number };
};

/** A request's running place: its tasks running now, and when the first one's time is up. */
type Place = { tasks: number; deadline: number };

/** What identifies a request in its account's places: its answer's promise (it may run several tasks), else its one work. */
const requestOf = (work: Work): unknown => work.caller?.answered ?? work;

/** Per account: queries running (their answer not yet written out) and waiting, at most. */
export type AccountBounds = { running: number; waiting: number };

export class EnginePool {
  private readonly idle: EngineProcess[] = [];
  private readonly waiting = new AccountQueues<Work>();
  private busy = 0;
  private closed = false;
  /** Per account, the requests holding a running place: from their first task's start until their answer is written out. */
  private readonly places = new Map<string, Map<unknown, Place>>();

  constructor(
    private readonly settings: DatasetEngineSettings,
    private readonly size: number,
    private readonly bounds: { perAccount?: AccountBounds; nice?: number } = {},
  ) {
    if (bounds.perAccount) {
      reportEngineQueries(() => ({ running: this.busy, waiting: this.waiting.size }));
    }
  }

  run(request: Work["request"], options: RunOptions = {}): Promise<unknown> {
    const { caller } = options;
    const refusal = caller && this.refusal(caller);
    if (refusal) {
      countEngineQuery(caller.door, "refused");
      return Promise.reject(refusal);
    }
    if (caller?.signal?.aborted) return Promise.reject(cancelledQuery());
    return new Promise((resolve, reject) => {
      const work: Work = { request, resolve, reject, attempt: 1, ...options };
      if (caller) countEngineQuery(caller.door, "admitted");
      caller?.signal?.addEventListener("abort", () => this.cancel(work), { once: true });
      this.waiting.push(caller?.account ?? NO_ACCOUNT, work);
      this.next();
    });
  }

  /** too_many_queries when the caller's account already has as many queries waiting as it may. */
  private refusal(caller: QueryCaller): AppError | undefined {
    const bounds = this.bounds.perAccount;
    if (!bounds) return undefined;
    const waiting = this.waiting.waitingFor(caller.account);
    if (waiting < bounds.waiting) return undefined;
    const running = [...(this.places.get(caller.account)?.values() ?? [])];
    // The earliest a running place frees: when the first running query's time is up.
    const soonest = Math.min(...running.map((place) => place.deadline));
    const retryAfter = Math.max(1, Math.ceil((soonest - Date.now()) / 1000));
    return new AppError(
      "too_many_queries",
      `This account has ${running.length} ${running.length === 1 ? "query" : "queries"} running and ${waiting} waiting in ` +
        `this server's data engine, the most it may have (${bounds.running} running, ${bounds.waiting} waiting): ` +
        `try again when one has finished.`,
      { "Retry-After": String(retryAfter) },
    );
  }

  /** A work whose client left: out of the queue, or its running task interrupted; answered as cancelled. */
  private cancel(work: Work): void {
    if (work.cancelled) return;
    work.cancelled = true;
    if (work.caller) countEngineQuery(work.caller.door, "cancelled");
    this.waiting.remove(work.caller?.account ?? NO_ACCOUNT, work);
    if (work.running?.id !== undefined) work.running.engine.cancel(work.running.id);
    work.reject(cancelledQuery());
  }

  /** Under the account's bound, or a further task of a request that holds a place (a query asking what it reads, then running). */
  private mayRun = (account: string, work: Work): boolean => {
    const bound = this.bounds.perAccount?.running;
    if (account === NO_ACCOUNT || bound === undefined) return true;
    const held = this.places.get(account);
    return !held || held.size < bound || held.has(requestOf(work));
  };

  private next(): void {
    while (this.waiting.size > 0 && this.busy < this.size) {
      const taken = this.waiting.takeNext(this.mayRun);
      if (!taken) return;
      const { account, work } = taken;
      work.deadline ??= Date.now() + (work.timeLimitMs ?? this.settings.taskTimeoutMs);
      const place = account === NO_ACCOUNT ? undefined : this.holdPlace(account, work);
      // An idle process that ended meanwhile has already left `idle` (forget).
      const engine =
        this.idle.pop() ?? new EngineProcess(this.settings, this.bounds.nice, (ended) => this.forget(ended));
      this.busy++;
      work.running = { engine };
      const task = engine
        .run(work.request, work.attempt, work.deadline, (id) => (work.running = { engine, id }))
        .then(work.resolve, (error: unknown) => this.failed(work, error));
      void task.finally(() => {
        work.running = undefined;
        this.busy--;
        place?.taskDone(work.retrying === true);
        if (engine.reusable) {
          this.idle.push(engine);
          engine.idleUntilExit(IDLE_EXIT_MS);
        } else {
          void engine.stop();
        }
        this.next();
      });
    }
  }

  /**
   * The running place of `work`'s request in `account`: held while any of its tasks runs and, for a
   * caller that says when its answer is written out, until then too (then the account's next query
   * may start). A task to run again gives its place back at once: it takes one again when it runs.
   */
  private holdPlace(account: string, work: Work): { taskDone: (retrying: boolean) => void } {
    const held = this.places.get(account) ?? new Map<unknown, Place>();
    this.places.set(account, held);
    const request = requestOf(work);
    const place = held.get(request) ?? { tasks: 0, deadline: work.deadline! };
    place.tasks++;
    held.set(request, place);
    const release = () => {
      if (place.tasks > 0 || held.get(request) !== place) return;
      held.delete(request);
      if (held.size === 0 && this.places.get(account) === held) this.places.delete(account);
      this.next();
    };
    return {
      taskDone: (retrying) => {
        place.tasks--;
        const answered = work.caller?.answered;
        if (answered && !retrying && !work.cancelled) void answered.then(release, release);
        else release();
      },
    };
  }

  /** A task's failure: again in a new process if its process was ended from outside, tries left. */
  private failed(work: Work, error: unknown): void {
    if (
      work.cancelled ||
      !(error instanceof EngineProcessEnded && error.endedFromOutside) ||
      work.attempt >= ENGINE_TASK_ATTEMPTS
    ) {
      work.reject(error);
      return;
    }
    logger().warn(
      { task: work.request.task, attempt: work.attempt, signal: error.exit.signal },
      `A ${work.request.task} task runs again: its engine process was ended from outside (${error.exit.signal}).`,
    );
    work.retrying = true;
    setTimeout(() => {
      work.retrying = false;
      if (this.closed || work.cancelled || Date.now() >= work.deadline!) return work.reject(error);
      work.attempt += 1;
      this.waiting.unshift(work.caller?.account ?? NO_ACCOUNT, work);
      this.next();
    }, RETRY_DELAY_MS * work.attempt);
  }

  private forget(engine: EngineProcess): void {
    const index = this.idle.indexOf(engine);
    if (index >= 0) this.idle.splice(index, 1);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.waiting.drain().forEach((work) => work.reject(new Error("The data engine is shutting down.")));
    await Promise.all(this.idle.splice(0).map((engine) => engine.stop()));
  }
}

/** What a query whose client left is answered (nobody reads it: it is for the logs). */
function cancelledQuery(): AppError {
  return new AppError("query_cancelled", "The query was cancelled: its client left before the answer.");
}
