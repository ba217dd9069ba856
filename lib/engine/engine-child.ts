import { AppError } from "../errors";
import { UnreadableFileError } from "./checks";
import { ENGINE_TASKS, withTaskEngine, type EngineScope, type EngineTaskName } from "./engine-tasks";

/**
 * An engine process (started by ./engine-pool.ts with an IPC channel): runs one task at a time as
 * the parent asks and answers with its result or its error. If DuckDB crashes on a file, only this
 * process dies; the parent fails that file and starts another. It exits when its parent goes away.
 */

export type EngineRequest = { id: number; task: EngineTaskName; input: unknown; scope: EngineScope };
export type EngineReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { message: string; unreadable: boolean; code?: string } };

if (!process.send) {
  console.error("lib/engine/engine-child.ts runs only as a child process of the app (lib/engine/engine-pool.ts).");
  process.exit(1);
}

process.on("message", (request: EngineRequest) => {
  void run(request).then((reply) => process.send!(reply));
});
process.on("disconnect", () => process.exit(0));

async function run({ id, task, input, scope }: EngineRequest): Promise<EngineReply> {
  try {
    const perform = ENGINE_TASKS[task] as (connection: never, input: unknown) => Promise<unknown>;
    const value = await withTaskEngine(scope, (connection) => perform(connection as never, input));
    return { id, ok: true, value };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A buyer's query refused for what it asks (lib/engine/query-tasks.ts) keeps its code.
    const code = error instanceof AppError ? error.code : undefined;
    return { id, ok: false, error: { message, unreadable: error instanceof UnreadableFileError, code } };
  }
}
