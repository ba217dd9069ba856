import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINE_TASK_ATTEMPTS } from "../../lib/engine/engine-pool";
import { db } from "../../lib/db/client";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { engineProcessesOf, waitForExit } from "../faults/helpers/processes";
import { publicationDone } from "./helpers";

/**
 * A publication whose engine process (the DuckDB child of the worker, lib/engine/engine-pool.ts)
 * is killed from outside, as the system's out-of-memory killer does: the task runs again in a new
 * process and the publication becomes a version; killed at every try, it fails with the reason, and
 * its part names can be published again.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;
let csv: string;

beforeAll(async () => {
  env = await createTestEnvironment("tables_engine_killed");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "tables-engine-killed-"));
  orderId = (await order((await buyer("engine-killed")).id)).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    // One engine process, one thread: every engine process seen runs this test's task.
    env: {
      REDIS_URL: "",
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
      DATASET_ENGINE_PROCESSES: "1",
      DATASET_THREADS: "1",
    },
  });
  // About 60 MB of CSV: seconds to profile, so a kill as its process appears lands mid-task.
  csv = path.join(workDir, "bulk.csv");
  await pipeline(
    (async function* () {
      yield "id,name,price\n";
      for (let id = 0; id < 2_000_000; id += 10_000) {
        yield `${Array.from({ length: 10_000 }, (_, i) => `${id + i},"Item ${id + i} of the catalog",${i % 997}`).join("\n")}\n`;
      }
    })(),
    createWriteStream(csv),
  );
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

/** The server's engine processes. */
const engineProcesses = () => engineProcessesOf(server.pid!);

/** Ends the engine processes left idle by earlier work, so that every one seen next runs a new task. */
async function noEngineProcesses(): Promise<void> {
  const idle = await engineProcesses();
  for (const pid of idle) process.kill(pid, "SIGKILL");
  expect(await waitForExit(idle)).toBe(true);
}

const publish = (table: string) =>
  publishTable({ orderId, table, parts: [{ name: `${table}.csv`, source: { stream: createReadStream(csv) } }] });

/** SIGKILLs each new engine process as it appears, `times` times at most or until the publication is done. */
async function killEngines(publicationId: string, times: number): Promise<number[]> {
  const killed: number[] = [];
  let done = false;
  while (killed.length < times && !done) {
    let next: number | undefined;
    await waitFor(
      async () => {
        next = (await engineProcesses()).find((pid) => !killed.includes(pid));
        const { status } = await db().tablePublication.findUniqueOrThrow({
          where: { id: publicationId },
          select: { status: true },
        });
        done = status === "ready" || status === "failed";
        return next !== undefined || done;
      },
      120_000,
      "an engine process to start, or the publication to be done",
    );
    if (next !== undefined && !done) {
      process.kill(next, "SIGKILL");
      killed.push(next);
    }
  }
  return killed;
}

describe("a publication whose engine process is killed from outside", { timeout: 300_000 }, () => {
  it("runs the task again in a new process, and the publication becomes a version", async () => {
    await noEngineProcesses();
    const published = await publish("retried");
    expect(await killEngines(published.publication, 1)).toHaveLength(1);
    expect(await publicationDone(published.publication, 240_000)).toMatchObject({ status: "ready", version: 1 });
    const log = await server.loggedSoFar();
    expect(log).toMatch(/A dataset engine process ended during a profile\w* task \(SIGKILL/);
    expect(log).toMatch(/A profile\w* task runs again: its engine process was ended from outside \(SIGKILL\)/);
  });

  it("fails it with the reason once killed at every try; its part names can be published again", async () => {
    await noEngineProcesses();
    const published = await publish("doomed");
    const killed = await killEngines(published.publication, ENGINE_TASK_ATTEMPTS + 1);
    const failed = await publicationDone(published.publication, 240_000);
    expect(killed).toHaveLength(ENGINE_TASK_ATTEMPTS);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(
      /^Part "doomed\.csv" could not be read: The data engine was ended while reading the file \(SIGKILL, 3 times in a row\), for example by the system for lack of memory\./,
    );

    const again = await publish("doomed");
    expect(await publicationDone(again.publication, 240_000)).toMatchObject({ status: "ready", version: 1 });
    const parts = await db().orderFile.findMany({
      where: { orderId, name: "doomed.csv" },
      select: { id: true, rows: true },
    });
    expect(parts).toEqual([{ id: again.files[0]!.id, rows: 2_000_000n }]);
  });
});
