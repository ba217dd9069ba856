import { withTempDir, duckdbMessageFor } from "../engine/engine";
import { runEngineTask } from "../engine/engine-pool";
import { localCopy } from "../datasets/source";
import { errorFields, logger } from "../log";
import { jobTransaction, QUEUES, sendJob } from "../queue";

/** Two steps of a publication's way to a version (./pipeline.ts) that need the engine or the queue. */

/** A profiled part whose Parquet rendition was never asked for (its profile predates tables): asked for now. */
export async function requestParquet(fileId: string): Promise<void> {
  await jobTransaction(async (tx) => {
    const created = await tx.fileRendition.createMany({ data: [{ fileId, format: "parquet" }], skipDuplicates: true });
    if (created.count === 1) await sendJob(QUEUES.datasetRendition, { fileId, format: "parquet" }, { tx });
  });
}

/** The key check in an engine process over the parts' Parquet renditions (copied from S3 first). */
export async function keyProblem(
  parts: { name: string; renditions: { storageKey: string | null }[] }[],
  key: string[],
  unique: boolean,
): Promise<string | undefined> {
  const found = await withTempDir(async (workDir) => {
    const local = [];
    for (const [index, part] of parts.entries()) {
      local.push({
        name: part.name,
        path: await localCopy(part.renditions[0]!.storageKey!, workDir, `part-${index}.parquet`),
      });
    }
    // What DuckDB answers about the data is the publication's answer; the store failing is thrown (retried).
    return runEngineTask(
      "checkKey",
      { parts: local, key, unique },
      { directory: workDir, readable: local.map((part) => part.path) },
    ).catch((error: unknown) => {
      logger().warn({ ...errorFields(error) }, "key check failed");
      return { error: duckdbMessageFor(error, "the parts", [workDir]) };
    });
  });
  if ("error" in found) return `The key (${key.join(", ")}) could not be checked: ${found.error}`;
  if (found.nullKeyIn) {
    return `Part "${found.nullKeyIn}" has a row whose key (${key.join(", ")}) is null; every row of a keyed table has its key.`;
  }
  if (found.duplicate) {
    const shown = (value: string) => (/^-?\d+(\.\d+)?$/.test(value) ? value : JSON.stringify(value));
    const values = key.map((column, i) => `${column} = ${shown(found.duplicate!.values[i]!)}`).join(", ");
    return `The key (${key.join(", ")}) is not unique: ${values} occurs ${found.duplicate.count} times; a snapshot has each key once.`;
  }
  return undefined;
}
