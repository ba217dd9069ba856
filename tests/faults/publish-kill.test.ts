import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { processPendingNow } from "../../lib/tables/pipeline";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { killableAdmin, seeded, type CliRun } from "./helpers/cli";
import { reportFault } from "./helpers/report";

/**
 * `table:publish` of four parts into S3 (multipart uploads) SIGKILLed at seeded random points, each
 * then run again as an operator would: after every kill no version exists and no row points at a
 * missing object; the rerun resumes the publication and the table gets its version, each part
 * recorded once with its source's sha256, and no part stored twice (no complete object that no row
 * points at). Replay a failure with FAULT_SEED.
 */

const SEED = Number(process.env.FAULT_SEED ?? 20261125);
const KILLS = 4;
const PARTS = 4;

let env: TestEnvironment;
let s3: TestS3;
let workDir: string;

beforeAll(async () => {
  env = await createTestEnvironment("fault_publish");
  s3 = await startTestS3();
  Object.assign(process.env, s3.env, { DATASET_TEMP_DIR: path.join(os.tmpdir(), "fault-publish-engine") });
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "fault-publish-"));
});

afterAll(async () => {
  await s3?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/** About 12 MiB of CSV (two multipart parts), ids from `from`. */
function csvPart(from: number): string {
  const lines = ["id,name,price"];
  for (let id = from; lines.length < 330_000; id++) lines.push(`${id},item ${id} of the catalog,${(id % 997) / 10}`);
  return `${lines.join("\n")}\n`;
}

describe("table:publish killed at random points", () => {
  it(
    "leaves no version and no row at a missing object; run again, it makes the version, nothing twice",
    { timeout: 600_000 },
    async () => {
      const random = seeded(SEED);
      const account = await buyer("fault-publish");
      const created = await killableAdmin(
        ["order:create", "--email", account.email, "--name", "Killed publishes"],
        s3.env,
      );
      const orderId = (JSON.parse(created.stdout) as { id: string }).id;
      const contents = new Map<string, string>();
      const publish = async (table: string, killAfterMs?: number) => {
        const args = ["table:publish", "--order", orderId, "--table", table, "--key", "id"];
        for (let part = 0; part < PARTS; part++) {
          const name = `${table}-part-${part}.csv`;
          const file = path.join(workDir, name);
          if (!contents.has(name)) {
            contents.set(name, csvPart(part * 1_000_000));
            await fs.writeFile(file, contents.get(name)!);
          }
          args.push("--path", file);
        }
        return killableAdmin(args, s3.env, killAfterMs);
      };

      /** Every row of the order at an object the store has (listed, not read: 12 MiB each). */
      async function rowsAtObjects(): Promise<string[]> {
        const keys = new Set((await s3.objectKeys()).map((key) => `s3://${TEST_BUCKET}/${key}`));
        const rows = await db().orderFile.findMany({ where: { orderId }, select: { name: true, storageKey: true } });
        return rows.filter((row) => !keys.has(row.storageKey)).map((row) => row.name);
      }

      const probe = await publish("probe");
      expect(probe.code, probe.stderr).toBe(0);
      const runs: (CliRun & { table: string; missing: string[]; versions: number; rerun: CliRun })[] = [];
      for (let kill = 0; kill < KILLS; kill++) {
        const table = `killed_${kill}`;
        const killed = await publish(table, Math.round(probe.ms * (0.2 + random() * 0.75)));
        const missing = await rowsAtObjects();
        const versions = await db().tableVersion.count({ where: { table: { orderId, name: table } } });
        runs.push({ ...killed, table, missing, versions, rerun: await publish(table) });
      }

      // The worker's work, done here: every publication the reruns finished becomes its table's version 1.
      await processPendingNow();
      const rows = await db().orderFile.findMany({
        where: { orderId, origin: "delivered" },
        select: {
          name: true,
          storageKey: true,
          sha256: true,
          publication: { select: { status: true, version: true } },
        },
      });
      const referenced = new Set(rows.map((row) => row.storageKey));
      const partObjects = (await s3.objectKeys()).filter((key) => /\.csv$/.test(key));
      const unreferenced = partObjects.filter((key) => !referenced.has(`s3://${TEST_BUCKET}/${key}`));
      await reportFault("publish-killed", {
        seed: SEED,
        undisturbed_ms: probe.ms,
        runs: runs.map(({ table, killed, code, ms, missing, versions, rerun }) => ({
          table,
          killed,
          code,
          ms,
          rows_at_missing_objects: missing.length,
          versions_after_kill: versions,
          rerun_code: rerun.code,
        })),
        rows: rows.length,
        part_objects: partObjects.length,
        parts_stored_twice: unreferenced.length,
        unfinished_multipart_parts: (await s3.uploadedParts()).length,
      });

      for (const run of runs) {
        expect(run.missing, `${run.table}: rows at missing objects after the kill`).toEqual([]);
        expect(run.versions, `${run.table}: a version after the kill`).toBe(0);
        expect(run.rerun.code, run.rerun.stderr).toBe(0);
        const parts = rows.filter((row) => row.name.startsWith(`${run.table}-`));
        expect(parts.map((row) => row.name).sort()).toEqual(
          Array.from({ length: PARTS }, (_, part) => `${run.table}-part-${part}.csv`),
        );
        for (const part of parts) {
          expect(part.sha256).toBe(sha256(contents.get(part.name)!));
          expect(part.publication).toEqual({ status: "ready", version: 1 });
        }
      }
      expect(rows).toHaveLength((KILLS + 1) * PARTS);
      expect(unreferenced).toEqual([]);
    },
  );
});
