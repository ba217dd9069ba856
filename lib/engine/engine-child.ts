import { takeAskedPriority } from "./child-start";
import { ENGINE_TASKS } from "./engine-tasks";
import { KeptEngine } from "./kept-engine";
import { keptIdleMs } from "./kept-instances";
import { QUERY_KEPT, QUERY_PARSE_ONLY, QUERY_READABLE } from "./query-tasks";
import { taskRunner, type EngineMessage, type EngineReply } from "./task-runner";

/**
 * An engine process (started by ./engine-pool.ts with an IPC channel): runs one task at a time as
 * the parent asks and answers with its result or its error (./task-runner.ts), buyers' read-only
 * queries on the instance it keeps for their files (./kept-engine.ts). If DuckDB crashes on
 * a file, only this process dies; the parent fails that file and starts another. It exits when its
 * parent goes away.
 */

if (!process.send) {
  console.error("lib/engine/engine-child.ts runs only as a child process of the app (lib/engine/engine-pool.ts).");
  process.exit(1);
}

takeAskedPriority();

// Resolved once the answer is written to the channel (or the channel is gone: the process then exits).
const send = (reply: EngineReply) =>
  new Promise<void>((resolve) => process.send!(reply, undefined, {}, () => resolve()));
// A malformed DATASET_QUERY_KEEP_SECONDS keeps nothing here; the query pool refuses it, naming it (./query-pool.ts).
const keptFor = (() => {
  try {
    return keptIdleMs();
  } catch {
    return 0;
  }
})();
const kept = new KeptEngine(keptFor);
const run = taskRunner(
  ENGINE_TASKS as unknown as Parameters<typeof taskRunner>[0],
  send,
  QUERY_READABLE as unknown as Parameters<typeof taskRunner>[2],
  { tasks: QUERY_KEPT, engine: kept },
  QUERY_PARSE_ONLY,
);

process.on("message", (message: EngineMessage) => void run(message));
// The parent gone (ended, or killed: it cannot remove this process's directories then), the kept
// instance's directory and its spill go with this process.
process.on("disconnect", () => {
  try {
    kept.close();
  } finally {
    process.exit(0);
  }
});
