import { processSingleton } from "../singleton";
import { datasetEngineSettings } from "./engine";
import { EnginePool, type QueryCaller } from "./engine-pool";
import { keptIdleMs } from "./kept-instances";
import type { EngineScope, EngineTaskInput, EngineTaskName, EngineTaskOutput } from "./engine-tasks";

/**
 * Buyers' queries (lib/explore: rows, SQL) run in a pool of their own, so they never wait behind a
 * worker's three-hour task and a worker never waits behind them: `DATASET_QUERY_PROCESSES` processes
 * (default 2). An account has at most `QUERY_ACCOUNT_RUNNING` queries running (default 1: from its
 * start until its answer is written out) and `QUERY_ACCOUNT_WAITING` waiting (default 4) in this
 * instance; one more is 429 too_many_queries. Waiting queries are taken account by account in turn,
 * so one buyer's flood waits behind itself, and a query whose client left leaves the queue or is
 * interrupted (./engine-pool.ts). A query's engine time is bounded in the process (scope.timeLimitMs:
 * DuckDB is interrupted); a process that does not stop `DATASET_QUERY_KILL_GRACE_SECONDS` (default 5)
 * later is killed and replaced: some of DuckDB's work (one long function call) never looks at the interrupt.
 * The processes run at the lower CPU priority `DATASET_QUERY_NICE` (default 10, 0 for none): the server
 * beside them answers its other requests first (docs/explore.md, "Limits"). Each keeps the DuckDB
 * instance of its last query's files `DATASET_QUERY_KEEP_SECONDS` (default 60) for the next query of
 * the same files (./kept-engine.ts).
 */
export function runQueryTask<Name extends EngineTaskName>(
  task: Name,
  input: EngineTaskInput<Name>,
  scope: EngineScope & { timeLimitMs: number },
  caller: QueryCaller,
): Promise<EngineTaskOutput<Name>> {
  return queryPool().run(
    { task, input, scope },
    { caller, timeLimitMs: scope.timeLimitMs + queryKillGraceMs() },
  ) as Promise<EngineTaskOutput<Name>>;
}

/** How long an interrupted query's process has to stop before it is killed (`DATASET_QUERY_KILL_GRACE_SECONDS`). */
function queryKillGraceMs(): number {
  const seconds = Number(process.env.DATASET_QUERY_KILL_GRACE_SECONDS || 5);
  if (Number.isFinite(seconds) && seconds > 0) return seconds * 1000;
  throw new Error(
    `DATASET_QUERY_KILL_GRACE_SECONDS must be a positive number, got "${process.env.DATASET_QUERY_KILL_GRACE_SECONDS}".`,
  );
}

function wholeSetting(name: string, fallback: number, least = 1): number {
  const value = Number(process.env[name] || fallback);
  if (!Number.isInteger(value) || value < least) {
    throw new Error(`${name} must be a whole number of at least ${least}, got "${process.env[name]}".`);
  }
  return value;
}

/** The query processes' niceness: 0 (as the server) to 19 (only what nothing else wants). */
function queryNice(): number {
  const nice = wholeSetting("DATASET_QUERY_NICE", 10, 0);
  if (nice > 19) throw new Error(`DATASET_QUERY_NICE must be a whole number from 0 to 19, got "${nice}".`);
  return nice;
}

const queryPool = () =>
  processSingleton("datasets:query-pool", () => {
    const size = wholeSetting("DATASET_QUERY_PROCESSES", 2);
    const perAccount = {
      running: wholeSetting("QUERY_ACCOUNT_RUNNING", 1),
      waiting: wholeSetting("QUERY_ACCOUNT_WAITING", 4, 0),
    };
    // Read by each process (./engine-child.ts), checked here so that a malformed value is said.
    keptIdleMs();
    return new EnginePool(datasetEngineSettings(), size, {
      perAccount,
      nice: queryNice(),
    });
  });
