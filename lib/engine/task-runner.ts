import type { DuckDBConnection } from "@duckdb/node-api";
import { AppError } from "../errors";
import { UnreadableFileError } from "./checks";
import type { EngineScope, EngineTaskName } from "./engine-tasks";
import { bareEngine, openTaskEngine, readableWithin, runInTime, type BareEngine } from "./task-engine";

/** What the app asks an engine process (./engine-child.ts) over its IPC channel, and its answer. */
export type EngineRequest = { id: number; task: EngineTaskName; input: unknown; scope: EngineScope };
export type EngineReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { message: string; unreadable: boolean; code?: string } };

type Perform<T = unknown> = (connection: DuckDBConnection, input: unknown) => Promise<T>;

/**
 * The engine process's tasks, one at a time, each in an instance of its own (the sandbox: never
 * reused by another task). A task's answer is sent first and its instance closed after (closing
 * takes about 17 ms, bench:explore), and the next task starts only once that close is done: one
 * locked instance at a time, so the process's memory bounds hold. The next task's instance is
 * then made at once, bare (./task-engine.ts bareEngine: nothing readable, nothing run in it), so a
 * query does not wait the 20 ms of its making. `send` resolves when the answer is handed over.
 * `readable` narrows a task's files before its instance is locked (openTaskEngine).
 */
export function taskRunner(
  tasks: Record<string, Perform>,
  send: (reply: EngineReply) => Promise<void>,
  readable: Record<string, Perform<string[]>> = {},
): (request: EngineRequest) => Promise<void> {
  let previous: Promise<void> = Promise.resolve();
  let spare: Promise<BareEngine | undefined> = madeAhead();
  return (request) => {
    previous = previous.then(async () => {
      const bare = await spare;
      await answerThenClose({ tasks, readable }, request, send, bare);
      spare = madeAhead();
    });
    return previous;
  };
}

/** The next task's bare instance; if making it failed, that task makes its own (and says why). */
function madeAhead(): Promise<BareEngine | undefined> {
  return bareEngine().catch(() => undefined);
}

async function answerThenClose(
  { tasks, readable }: { tasks: Record<string, Perform>; readable: Record<string, Perform<string[]>> },
  { id, task, input, scope }: EngineRequest,
  send: (reply: EngineReply) => Promise<void>,
  bare: BareEngine | undefined,
): Promise<void> {
  // Set once the instance is open: openTaskEngine closes the one it could not open (`bare` too).
  let close: (() => void) | undefined;
  let reply: EngineReply;
  try {
    const readableOf = readable[task];
    const engine = bare ?? (await bareEngine());
    let files = scope.readable;
    try {
      // Parsed before anything is readable or locked in the instance: it reads nothing.
      if (readableOf) files = readableWithin(scope, await readableOf(engine.connection, input));
    } catch (error) {
      engine.close();
      throw error;
    }
    await openTaskEngine(scope, files, engine);
    close = engine.close;
    const value = await runInTime(engine.connection, scope, (connection) => tasks[task]!(connection, input));
    reply = { id, ok: true, value };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A buyer's query refused for what it asks (./query-tasks.ts) keeps its code.
    const code = error instanceof AppError ? error.code : undefined;
    reply = { id, ok: false, error: { message, unreadable: error instanceof UnreadableFileError, code } };
  }
  try {
    await send(reply);
  } finally {
    close?.();
  }
}
