import type { DuckDBConnection } from "@duckdb/node-api";
import { AppError } from "../errors";
import { UnreadableFileError } from "./checks";
import type { EngineScope, EngineTaskName } from "./engine-tasks";
import { KeptEngine } from "./kept-engine";
import { bareEngine, openTaskEngine, readableWithin, runInTime, type BareEngine } from "./task-engine";

/** What the app asks an engine process (./engine-child.ts) over its IPC channel, and its answer. */
export type EngineRequest = { id: number; task: EngineTaskName; input: unknown; scope: EngineScope };
/** A request, or the cancelling of the running one (its client left: DuckDB is interrupted). */
export type EngineMessage = EngineRequest | { cancel: number };
export type EngineReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { message: string; unreadable: boolean; code?: string } };

type Perform<T = unknown> = (connection: DuckDBConnection, input: unknown) => Promise<T>;
/** A task answered from its text's parse (./query-tasks.ts QUERY_PARSE_ONLY): it is given no connection. */
type FromParse = (connection: undefined, input: unknown) => Promise<unknown>;
/** A task's narrowing of its files, from its input alone (./query-tasks.ts QUERY_READABLE). */
type ReadableOf = (input: unknown) => Promise<string[]>;

/** The tasks that may run on a kept instance (./query-tasks.ts QUERY_KEPT) and the process's slot for it. */
export type KeptTasks = { tasks: ReadonlySet<string>; engine: KeptEngine };

/** The task at work and its connection, for a cancel message. */
type Running = { id?: number; connection?: DuckDBConnection };

type Runner = {
  running: Running;
  tasks: Record<string, Perform>;
  readable: Record<string, ReadableOf>;
  kept: KeptTasks;
  parseOnly: ReadonlySet<string>;
};

/**
 * The engine process's tasks, one at a time. A task of `kept.tasks` reading at least one file runs
 * on a new connection of the instance kept for its exact files (./kept-engine.ts), made on first
 * use; any other task gets an instance of its own (the kept one closed first: one instance at work
 * at a time, so the process's memory bounds hold). A task's answer is sent first and its instance
 * (or its connection) closed after: closing an instance takes about 17 ms (bench:explore), and the
 * next task starts only once that close is done. The next own instance is made ahead, bare
 * (./task-engine.ts bareEngine: nothing readable, nothing run in it), so a query does not wait the
 * 20 ms of its making. `send` resolves when the answer is handed over. `readable` narrows a task's
 * files before its instance is chosen and locked: it parses, reads nothing. A task of `parseOnly`
 * answers from its text's parse alone: it gets no connection and leaves the kept instance alone.
 * A cancel message interrupts the running task of that id at once (not after it, as a task waits).
 */
export function taskRunner(
  tasks: Record<string, Perform>,
  send: (reply: EngineReply) => Promise<void>,
  readable: Record<string, ReadableOf> = {},
  kept: KeptTasks = { tasks: new Set(), engine: new KeptEngine(0) },
  parseOnly: ReadonlySet<string> = new Set(),
): (message: EngineMessage) => Promise<void> {
  let previous: Promise<void> = Promise.resolve();
  const running: Running = {};
  let spare: Promise<BareEngine | undefined> | undefined = madeAhead();
  // The instance made ahead, taken by the task that needs an instance (a failed one: a new one).
  const takeSpare = async () => {
    const made = await spare;
    spare = undefined;
    return made ?? (await bareEngine());
  };
  return (message) => {
    if ("cancel" in message) {
      if (running.id === message.cancel) running.connection?.interrupt();
      return Promise.resolve();
    }
    previous = previous.then(async () => {
      await answerThenClose({ tasks, readable, kept, parseOnly, running }, message, send, takeSpare);
      spare ??= madeAhead();
    });
    return previous;
  };
}

/** The next task's bare instance; if making it failed, that task makes its own (and says why). */
function madeAhead(): Promise<BareEngine | undefined> {
  return bareEngine().catch(() => undefined);
}

async function answerThenClose(
  { tasks, readable, kept, parseOnly, running }: Runner,
  { id, task, input, scope }: EngineRequest,
  send: (reply: EngineReply) => Promise<void>,
  takeSpare: () => Promise<BareEngine>,
): Promise<void> {
  kept.engine.hold();
  // What follows the answer: the task's own instance closed, or its connection on the kept one.
  let close: (() => void) | undefined;
  let reply: EngineReply;
  try {
    let value: unknown;
    if (parseOnly.has(task)) {
      // Answered from its text's parse alone (./sql-parser.ts): no instance, the kept one left as it is.
      value = await (tasks[task] as unknown as FromParse)(undefined, input);
    } else {
      const files = await readableFiles(readable[task], input, scope);
      let connection: DuckDBConnection;
      if (kept.engine.enabled && kept.tasks.has(task) && files.length > 0) {
        connection = await kept.engine.connect(KeptEngine.keyOf(scope, files), scope, files, takeSpare);
        close = () => connection.closeSync();
      } else {
        kept.engine.close();
        // openTaskEngine closes the instance it could not open (`bare` too).
        const engine = await openTaskEngine(scope, files, await takeSpare());
        ({ connection, close } = engine);
      }
      running.id = id;
      running.connection = connection;
      value = await runInTime(connection, scope, (on) => tasks[task]!(on, input));
    }
    reply = { id, ok: true, value };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A buyer's query refused for what it asks (./query-tasks.ts) keeps its code.
    const code = error instanceof AppError ? error.code : undefined;
    reply = { id, ok: false, error: { message, unreadable: error instanceof UnreadableFileError, code } };
    // A failed task (past its time limit, DuckDB's internal error, a refusal) leaves no instance kept.
    if (!parseOnly.has(task)) {
      const closeOwn = close;
      close = () => {
        closeOwn?.();
        kept.engine.close();
      };
    }
  }
  running.id = running.connection = undefined;
  try {
    await send(reply);
  } finally {
    close?.();
    kept.engine.idle();
  }
}

/**
 * The files a task reads: those handed over, or fewer if it narrows them (`readableOf`, a SQL
 * query's named views, from its text's parse: nothing is read).
 */
async function readableFiles(
  readableOf: ReadableOf | undefined,
  input: unknown,
  scope: EngineScope,
): Promise<string[]> {
  return readableWithin(scope, readableOf ? await readableOf(input) : scope.readable);
}
