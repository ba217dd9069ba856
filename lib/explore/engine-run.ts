import { withTaskDirectoryPath } from "../engine/engine";
import { EngineProcessEnded, type QueryCaller } from "../engine/engine-pool";
import { runQueryTask } from "../engine/query-pool";
import type { EngineTaskInput, EngineTaskName, EngineTaskOutput } from "../engine/engine-tasks";
import type { QueryFile } from "../engine/query-tasks";
import { AppError } from "../errors";

/** Engine time a buyer's query may use (`DATASET_QUERY_SECONDS`, default 10: the contract's limit). */
export function queryTimeLimitMs(): number {
  const seconds = Number(process.env.DATASET_QUERY_SECONDS || 10);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`DATASET_QUERY_SECONDS must be a positive number, got "${process.env.DATASET_QUERY_SECONDS}".`);
  }
  return seconds * 1000;
}

export type { QueryCaller } from "../engine/engine-pool";

/**
 * Runs a query task in the query pool for `caller` (its account, its door, its request's lifetime), able to read `files` only, in a private
 * directory of its own (its spill), made only if it needs one, removed afterwards. An engine process killed under it (past the
 * time limit and the grace, over the memory cap) is the buyer's 422; one that crashed, a 400 naming it.
 */
export function runBuyerQuery<Name extends EngineTaskName>(
  caller: QueryCaller,
  task: Name,
  input: EngineTaskInput<Name>,
  files: QueryFile[],
): Promise<EngineTaskOutput<Name>> {
  return withTaskDirectoryPath((directory) => runBuyerQueryIn(directory, caller, task, input, files));
}

/** runBuyerQuery in `directory`, the one place the task may write (a file it makes is read there after). */
export async function runBuyerQueryIn<Name extends EngineTaskName>(
  directory: string,
  caller: QueryCaller,
  task: Name,
  input: EngineTaskInput<Name>,
  files: QueryFile[],
): Promise<EngineTaskOutput<Name>> {
  try {
    return await runQueryTask(
      task,
      input,
      { directory, readable: files.map((file) => file.path), timeLimitMs: queryTimeLimitMs() },
      caller,
    );
  } catch (error) {
    if (!(error instanceof EngineProcessEnded)) throw error;
    if (error.reason !== "crashed") {
      throw new AppError(
        "query_timeout",
        "The query needed more engine time or memory than a query may use: narrow it (a filter, fewer columns, a smaller limit).",
      );
    }
    throw new AppError(
      task === "orderSql" || task === "orderSqlParquet" || task === "sqlTables" ? "invalid_sql" : "invalid_filter",
      `The data engine stopped on this query (${error.exit.signal ?? `exit code ${error.exit.code}`}): simplify it.`,
    );
  }
}
