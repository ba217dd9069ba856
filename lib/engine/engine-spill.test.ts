import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { datasetEngineSettings, duckdbMessageFor } from "./engine";
import { withTaskEngine } from "./task-engine";

/** A task's spill is bounded (DATASET_SPILL_MAX, DuckDB's max_temp_directory_size), not 90% of the free disk. */

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

async function inTask<T>(work: Parameters<typeof withTaskEngine<T>>[1]): Promise<T> {
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), "engine-spill-"));
  try {
    return await withTaskEngine({ directory, readable: [] }, work);
  } finally {
    await fs.rm(directory, { recursive: true, force: true });
  }
}

describe("the data engine's spill", () => {
  it("is capped at 50GB by default, and DATASET_SPILL_MAX sets the cap", async () => {
    expect(datasetEngineSettings({}).spillMax).toBe("50GB");
    expect(() => datasetEngineSettings({ DATASET_SPILL_MAX: "lots" })).toThrow(/DATASET_SPILL_MAX must be a size/);
    const setting = async () =>
      inTask(async (connection) =>
        String(
          (await connection.runAndReadAll("SELECT current_setting('max_temp_directory_size')")).getRowsJson()[0]![0],
        ),
      );
    delete process.env.DATASET_SPILL_MAX;
    expect(await setting()).toBe("46.5 GiB");
    process.env.DATASET_SPILL_MAX = "2GiB";
    expect(await setting()).toBe("2.0 GiB");
  });

  it("fails a task that needs more with a sentence naming the setting", async () => {
    Object.assign(process.env, { DATASET_SPILL_MAX: "1MB", DATASET_MEMORY_LIMIT: "32MB", DATASET_THREADS: "1" });
    const grouped = inTask((connection) =>
      connection.runAndReadAll("SELECT count(*) FROM (SELECT i, sum(i) FROM range(5000000) t(i) GROUP BY i)"),
    );
    const error = await grouped.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(Error);
    expect(duckdbMessageFor(error, "the parts", [])).toBe(
      "it needed more temporary disk space than the data engine may use (DATASET_SPILL_MAX, 1MB).",
    );
  });
});
