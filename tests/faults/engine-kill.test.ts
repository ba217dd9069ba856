import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { addOrderFile } from "../../lib/operator/orders";
import { localStorage } from "../../lib/storage";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { engineProcessReading } from "./helpers/processes";
import { errorCode, reportFault, tally } from "./helpers/report";

/**
 * The dataset engine process (the child that runs DuckDB for the job worker, lib/engine/engine-pool.ts)
 * SIGKILLed in the middle of profiling a large CSV: the API never stops answering (/api/health every
 * 100 ms throughout), the file ends `failed` with a sentence (or is profiled again), and the file
 * queued after it is profiled by a new engine process. The process killed is the one reading the
 * large file (its stored file open, bytes read growing), never an idle one or the next file's.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;

beforeAll(async () => {
  env = await createTestEnvironment("fault_engine");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "fault-engine-"));
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine"), DATASET_THREADS: "1" },
  });
});

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

/** About `megabytes` MB of CSV: long enough to profile that a kill lands mid-file. */
async function largeCsv(megabytes: number): Promise<string> {
  const file = path.join(workDir, "large.csv");
  await pipeline(
    (async function* () {
      yield "id,name,price,note\n";
      let written = 0;
      for (let id = 0; written < megabytes * 1024 * 1024; id += 10_000) {
        const lines = Array.from(
          { length: 10_000 },
          (_, i) => `${id + i},"Item ${id + i}",${(i % 997) / 10},n${i % 13}`,
        );
        const chunk = `${lines.join("\n")}\n`;
        written += chunk.length;
        yield chunk;
      }
    })(),
    createWriteStream(file),
  );
  return file;
}

/** Bytes the process reading the large file reads before it is killed: well into the file, far from its end. */
const READ_BEFORE_KILL = 16 * 1024 * 1024;

describe("the dataset engine process killed mid-file", () => {
  it(
    "never stops the API; the file ends failed (or redone) and the next file is profiled",
    { timeout: 300_000 },
    async () => {
      const account = await buyer("fault-engine");
      const { id: orderId } = await order(account.id);
      const large = await addOrderFile({
        orderId,
        name: "large.csv",
        source: createReadStream(await largeCsv(400)),
      });
      const next = await addOrderFile({
        orderId,
        name: "next.csv",
        source: Readable.from([Buffer.from("a,b\n1,2\n")]),
      });

      const answers: (number | string)[] = [];
      let polling = true;
      const poll = (async () => {
        while (polling) {
          answers.push(
            await fetch(`${server.url}/api/health`, { signal: AbortSignal.timeout(5_000) }).then(
              (response) => response.status,
              errorCode,
            ),
          );
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();

      // The large file's profile is under way once the engine process holding it open has read a good part.
      const { storageKey } = await db().orderFile.findUniqueOrThrow({
        where: { id: large.id },
        select: { storageKey: true },
      });
      const largePath = localStorage().pathOf(storageKey);
      let reading: { pid: number; bytesRead: number } | undefined;
      await waitFor(
        async () => (reading = await engineProcessReading(server.pid!, largePath)) !== undefined,
        120_000,
        "an engine process to open the large file",
      );
      const { pid: victim, bytesRead: atOpen } = reading!;
      await waitFor(
        async () => {
          reading = await engineProcessReading(server.pid!, largePath);
          return reading?.pid === victim && reading.bytesRead > atOpen + READ_BEFORE_KILL;
        },
        120_000,
        `engine process ${victim} to read ${READ_BEFORE_KILL} bytes of the large file`,
      );
      const stillProfiling =
        (await db().orderFile.findUniqueOrThrow({ where: { id: large.id }, select: { profileStatus: true } }))
          .profileStatus === "pending";
      const killedAt = Date.now();
      process.kill(victim, "SIGKILL");

      await waitFor(
        async () =>
          (await db().orderFile.count({ where: { orderId, profileStatus: "pending" } })) === 0 &&
          (await db().fileRendition.count({ where: { file: { orderId }, status: "pending" } })) === 0,
        240_000,
        "both files profiled",
      );
      const doneAt = Date.now();
      polling = false;
      await poll;

      const files = await db().orderFile.findMany({
        where: { orderId },
        select: { id: true, profileStatus: true, profileError: true },
      });
      const largeAfter = files.find((file) => file.id === large.id)!;
      const nextAfter = files.find((file) => file.id === next.id)!;
      const log = await server.loggedSoFar();
      await reportFault("engine-process-killed", {
        health_requests: answers.length,
        health_answers: tally(answers),
        killed_mid_profile: stillProfiling,
        engine_processes_killed: 1,
        bytes_read_before_kill: reading!.bytesRead - atOpen,
        large_file: largeAfter.profileStatus,
        large_file_error: largeAfter.profileError,
        next_file: nextAfter.profileStatus,
        recovery_ms: doneAt - killedAt,
      });

      expect(stillProfiling).toBe(true);
      expect(answers.length).toBeGreaterThan(10);
      expect(answers.filter((answer) => answer !== 200)).toEqual([]);
      expect(["failed", "ready"]).toContain(largeAfter.profileStatus);
      if (largeAfter.profileStatus === "failed") {
        expect(largeAfter.profileError).toMatch(/^The data engine was ended while reading the file \(SIGKILL/);
      }
      expect(nextAfter.profileStatus).toBe("ready");
      expect(log).toMatch(/A dataset engine process ended during a profile\w* task \(SIGKILL/);
    },
  );
});
