import { createHash, randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db, disconnectDb } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { killableAdmin as admin, seeded, type CliRun } from "./helpers/cli";
import { reportFault } from "./helpers/report";

/**
 * The operator CLI killed (SIGKILL) at random points and run again: `order:add-file --path` of a
 * multipart upload into S3, and `storage:migrate --to s3` of local files. Afterwards no row points at
 * a missing object, nothing is recorded twice, every recorded size and sha256 is the source's, and
 * what a kill left behind in the store (objects no row points at, parts of unfinished multipart
 * uploads) is counted and reported. The kill points come from a seeded generator (printed), so a
 * failure can be replayed with FAULT_SEED.
 */

const SEED = Number(process.env.FAULT_SEED ?? 20261124);
const KILLS = 4;

let env: TestEnvironment;
let s3: TestS3;
let workDir: string;

beforeAll(async () => {
  env = await createTestEnvironment("fault_storage");
  s3 = await startTestS3();
  Object.assign(process.env, s3.env); // this process reads the store's objects back to check them
  // ...but the CLI runs below say for themselves which driver they use.
  process.env.STORAGE_DRIVER = "local";
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "fault-storage-"));
});

afterAll(async () => {
  await s3?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The stored object's bytes, read back through the store's API; undefined when there is none. */
async function objectBytes(location: string): Promise<Buffer | undefined> {
  const { readS3Object } = await import("../../lib/storage/s3");
  try {
    const { body } = await readS3Object(location);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } catch {
    return undefined;
  }
}

describe("the CLI killed at random points", () => {
  it("order:add-file of a multipart upload: one row, pointing at a whole object", { timeout: 300_000 }, async () => {
    const random = seeded(SEED);
    const account = await buyer("fault-add-file");
    const order = await admin(["order:create", "--email", account.email, "--name", "Killed uploads"], {});
    const orderId = (JSON.parse(order.stdout) as { id: string }).id;
    const source = path.join(workDir, "large.bin");
    const content = randomBytes(96 * 1024 * 1024); // 12 parts of 8 MiB
    await fs.writeFile(source, content);
    const addFile = (name: string, killAfterMs?: number) =>
      admin(["order:add-file", "--order", orderId, "--path", source, "--name", name], s3.env, killAfterMs);

    // How long an undisturbed run takes (start-up included), to spread the kills over it.
    const probe = await addFile("probe.bin");
    expect(probe.code, probe.stderr).toBe(0);
    // Each upload is killed once at a random point, then run again as an operator would.
    const runs: (CliRun & { name: string; rerun: CliRun })[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const name = `large-${kill}.bin`;
      const killed = await addFile(name, Math.round(probe.ms * (0.3 + random() * 0.65)));
      runs.push({ ...killed, name, rerun: await addFile(name) });
    }

    const rows = await db().orderFile.findMany({
      where: { orderId },
      select: { name: true, storageKey: true, size: true, sha256: true },
    });
    const referenced = new Set(rows.map((row) => row.storageKey));
    const objects = await s3.objectKeys();
    const orphans = objects.filter((key) => !referenced.has(`s3://${TEST_BUCKET}/${key}`));
    const parts = await s3.uploadedParts();
    await reportFault("add-file-killed", {
      seed: SEED,
      undisturbed_ms: probe.ms,
      runs: runs.map(({ name, killed, code, ms, rerun }) => ({ name, killed, code, ms, rerun_code: rerun.code })),
      rows: rows.length,
      orphan_objects: orphans.length,
      unfinished_multipart_parts: parts.length,
    });
    for (const run of runs) {
      // The rerun finishes the upload, or finds it recorded already (the kill came after the row).
      expect(run.rerun.code === 0 || /already has a file named/.test(run.rerun.stderr), run.rerun.stderr).toBe(true);
      const recorded = rows.filter((row) => row.name === run.name);
      expect(recorded).toHaveLength(1);
      expect(Number(recorded[0]!.size)).toBe(content.length);
      expect(recorded[0]!.sha256).toBe(sha256(content));
      const stored = await objectBytes(recorded[0]!.storageKey);
      expect(stored && sha256(stored)).toBe(sha256(content));
    }
  });

  it(
    "storage:migrate --to s3: every row at an existing, verified object, none twice",
    { timeout: 300_000 },
    async () => {
      const random = seeded(SEED + 1);
      const local = { STORAGE_DRIVER: "local", STORAGE_DIR: env.storageDir };
      const account = await buyer("fault-migrate");
      const order = await admin(
        ["order:create", "--email", account.email, "--name", "Migrated", "--status", "delivered"],
        local,
      );
      const orderId = (JSON.parse(order.stdout) as { id: string }).id;
      const contents = new Map<string, Buffer>();
      for (const [index, megabytes] of [4, 8, 16, 24, 32, 40].entries()) {
        const name = `part-${index}.bin`;
        const bytes = randomBytes(megabytes * 1024 * 1024);
        await fs.writeFile(path.join(workDir, name), bytes);
        contents.set(name, bytes);
        const added = await admin(["order:add-file", "--order", orderId, "--path", path.join(workDir, name)], local);
        expect(added.code, added.stderr).toBe(0);
      }
      const migrate = (killAfterMs?: number) =>
        admin(["storage:migrate", "--to", "s3"], { ...s3.env, STORAGE_DIR: env.storageDir }, killAfterMs);

      /** Every row points at bytes that exist: its local file, or its object in the store. */
      async function rowsPointAtTheirBytes(): Promise<{ local: number; s3: number; missing: string[] }> {
        const rows = await db().orderFile.findMany({
          where: { orderId },
          select: { id: true, storageKey: true, size: true },
        });
        const missing: string[] = [];
        let inS3 = 0;
        for (const row of rows) {
          if (row.storageKey.startsWith("s3://")) {
            inS3++;
            if (!(await objectBytes(row.storageKey))) missing.push(row.id);
          } else {
            const stat = await fs.stat(path.join(env.storageDir, row.storageKey)).catch(() => undefined);
            if (stat?.size !== Number(row.size)) missing.push(row.id);
          }
        }
        return { local: rows.length - inS3, s3: inS3, missing };
      }

      const runs: (CliRun & { afterwards: Awaited<ReturnType<typeof rowsPointAtTheirBytes>> })[] = [];
      for (let kill = 0; kill < KILLS; kill++) {
        const run = await migrate(Math.round(750 + random() * 600));
        runs.push({ ...run, afterwards: await rowsPointAtTheirBytes() });
      }
      let final: CliRun;
      let reruns = 0;
      do {
        final = await migrate();
        reruns++;
      } while (final.code !== 0 && reruns < 3);
      const finalState = await rowsPointAtTheirBytes();

      const rows = await db().orderFile.findMany({
        where: { orderId },
        select: { name: true, storageKey: true, sha256: true },
      });
      const verified = [];
      for (const row of rows) {
        const bytes = await objectBytes(row.storageKey);
        verified.push(
          bytes !== undefined && sha256(bytes) === row.sha256 && sha256(bytes) === sha256(contents.get(row.name)!),
        );
      }
      await reportFault("storage-migrate-killed", {
        seed: SEED + 1,
        files: contents.size,
        runs: runs.map(({ code, killed, ms, afterwards }) => ({
          killed,
          code,
          ms,
          ...afterwards,
          missing: afterwards.missing.length,
        })),
        final: { code: final.code, reruns, report: final.stdout ? JSON.parse(final.stdout) : null },
        rows: rows.length,
        rows_verified: verified.filter(Boolean).length,
      });
      for (const run of runs) expect(run.afterwards.missing).toEqual([]);
      expect(final.code, final.stderr).toBe(0);
      expect(finalState).toEqual({ local: 0, s3: contents.size, missing: [] });
      expect(rows).toHaveLength(contents.size);
      expect(verified.every(Boolean)).toBe(true);
      await disconnectDb();
    },
  );
});
