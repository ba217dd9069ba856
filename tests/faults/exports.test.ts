import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createDestination, updateDestination } from "../../lib/exports/destinations";
import { exportNow } from "../../lib/exports/run-now";
import { runExport } from "../../lib/exports/runs";
import { closeJobQueue } from "../../lib/queue";
import { addOrderFile, createOrder } from "../../lib/operator/orders";
import { OPERATOR } from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { sha256, startTestSftp, type TestSftp } from "../exports/stores";
import { reportFault } from "./helpers/report";

/**
 * Export runs meeting a store that fails under them: the S3 store killed (SIGKILL) in the middle of
 * a multipart upload and started again, an SFTP disk that fills up, an SFTP server that stops
 * answering mid-write, and a server whose host key changed. After each: no object half written
 * under its final key, nothing written twice, the run's error says what happened, and the next
 * attempt (once the store is back) completes with every byte verified.
 */

const LAKE = "fault-lake";
const FILE_BYTES = 40 * 1024 * 1024; // five 8 MiB parts

let env: TestEnvironment;
let s3: TestS3;
let s3Directory: string;
let sftp: TestSftp;

beforeAll(async () => {
  env = await createTestEnvironment("fault_exports");
  s3Directory = await fs.mkdtemp(path.join(os.tmpdir(), "fault-exports-s3-"));
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE], directory: s3Directory });
  sftp = await startTestSftp();
  Object.assign(process.env, {
    STORAGE_DRIVER: "local",
    AUTH_SECRET: TEST_AUTH_SECRET,
    EXPORT_ALLOW_PRIVATE: "true",
    EXPORT_STALL_TIMEOUT_MS: "3000",
  });
});

afterAll(async () => {
  await closeJobQueue();
  await s3?.stop();
  await sftp?.stop();
  await env?.cleanup();
  await fs.rm(s3Directory, { recursive: true, force: true });
});

async function orderWith(buyerId: string, files: Record<string, Buffer>) {
  const order = await createOrder({ buyerId, name: "fault", status: "delivered" });
  for (const [name, content] of Object.entries(files)) {
    await addOrderFile({ orderId: order.id, name, source: Readable.from([content]) });
  }
  return order;
}

const s3Fields = (endpoint: string) => ({
  bucket: LAKE,
  endpoint,
  force_path_style: true,
  access_key_id: "S3RVER",
  secret_access_key: "S3RVER",
});

const sftpFields = () => ({
  host: sftp.host,
  port: sftp.port,
  username: sftp.username,
  password: sftp.password,
  directory: "/faults",
  host_key_sha256: sftp.fingerprint(),
});

describe("exports when the store fails under them", () => {
  it("S3 store killed mid-upload and started again: nothing under the final key, then the run completes once", async () => {
    const account = await buyer("fault-s3");
    const content = randomBytes(FILE_BYTES);
    const order = await orderWith(account.id, { "big.bin": content, "small.bin": Buffer.from("a\n1\n") });
    const destination = await createDestination(
      account.id,
      { name: "lake", type: "s3", fields: s3Fields(s3.endpoint) },
      OPERATOR,
    );
    const [run] = await exportNow({ orderId: order.id, destinationId: destination.id });
    const attempt = runExport(run!.id);
    await waitFor(async () => (await s3.uploadedParts(LAKE)).length >= 1, 60_000, "the first part of the upload");
    const partsWhenKilled = (await s3.uploadedParts(LAKE)).length;
    await s3.stop("SIGKILL");
    const first = await attempt;
    const stored = await db().exportRun.findUniqueOrThrow({ where: { id: run!.id } });

    s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE], directory: s3Directory });
    const keysWhileDown = (await s3.objectKeys(LAKE)).filter((key) => key.endsWith("big.bin"));
    const leftParts = (await s3.uploadedParts(LAKE)).length;
    await updateDestination(
      account.id,
      destination.id,
      // The store came back on another port: a new endpoint needs the secret again.
      { name: "lake", type: "s3", fields: s3Fields(s3.endpoint) },
      OPERATOR,
    );
    const second = await runExport(run!.id, { now: () => stored.nextAttemptAt! });
    const keys = await s3.objectKeys(LAKE);
    await reportFault("export-s3-store-killed", {
      part_bytes: 8 * 1024 * 1024,
      parts_when_killed: partsWhenKilled,
      first_attempt: first.result,
      first_error: stored.error,
      object_under_final_key_after_kill: keysWhileDown.length,
      orphan_parts_left_in_store: leftParts,
      second_attempt: second.result,
      keys_after: keys,
    });
    expect(first).toMatchObject({
      result: "retry",
      error: expect.stringMatching(/could not be reached|socket|ECONNRESET|EPIPE|failed/),
    });
    expect(keysWhileDown).toEqual([]);
    expect(second).toMatchObject({ result: "completed", files: 2 });
    expect(keys).toEqual([`${order.id}/_manifest.json`, `${order.id}/big.bin`, `${order.id}/small.bin`].sort());
    const landed = await fs.readFile(path.join(s3Directory, LAKE, order.id, "big.bin._S3rver_object"));
    expect(sha256(landed)).toBe(sha256(content));
  });

  it("a full SFTP disk: the write is refused in a sentence, no partial file stays, and the next attempt completes", async () => {
    const account = await buyer("fault-sftp-full");
    const content = randomBytes(1024 * 1024);
    const order = await orderWith(account.id, { "data.bin": content });
    const { id } = await createDestination(account.id, { name: "full", type: "sftp", fields: sftpFields() }, OPERATOR);
    sftp.faults.diskQuotaBytes = 200_000;
    const [run] = await exportNow({ orderId: order.id, destinationId: id });
    const first = await runExport(run!.id);
    const filesAfterFull = await sftp.files();
    delete sftp.faults.diskQuotaBytes;
    const stored = await db().exportRun.findUniqueOrThrow({ where: { id: run!.id } });
    const second = await runExport(run!.id, { now: () => stored.nextAttemptAt! });
    await reportFault("export-sftp-disk-full", {
      first_attempt: first.result,
      first_error: stored.error,
      files_after_refusal: filesAfterFull,
      second_attempt: second.result,
    });
    expect(first).toMatchObject({ result: "retry", error: expect.stringMatching(/No space left on device/) });
    expect(filesAfterFull.filter((file) => file.startsWith(`faults/${order.id}`))).toEqual([]);
    expect(second).toMatchObject({ result: "completed" });
    expect(sha256(await fs.readFile(path.join(sftp.root, "faults", order.id, "data.bin")))).toBe(sha256(content));
    expect((await sftp.files()).filter((file) => file.includes(".partial"))).toEqual([]);
  });

  it("an SFTP server that stops answering mid-write: given up after the stall timeout, nothing under the final name", async () => {
    const account = await buyer("fault-sftp-hang");
    const order = await orderWith(account.id, { "data.bin": randomBytes(2 * 1024 * 1024) });
    const { id } = await createDestination(account.id, { name: "hang", type: "sftp", fields: sftpFields() }, OPERATOR);
    sftp.faults.hangAfterBytes = 0;
    try {
      const [run] = await exportNow({ orderId: order.id, destinationId: id });
      const started = Date.now();
      const outcome = await runExport(run!.id);
      const seconds = (Date.now() - started) / 1000;
      await reportFault("export-sftp-hangs", { outcome: outcome.result, seconds, stall_timeout_s: 3 });
      expect(outcome).toMatchObject({
        result: "retry",
        error: expect.stringMatching(/no byte moved for 3 s|did not answer/),
      });
      expect(seconds).toBeLessThan(30);
      expect((await sftp.files()).filter((file) => file === `faults/${order.id}/data.bin`)).toEqual([]);
    } finally {
      delete sftp.faults.hangAfterBytes;
    }
  });

  it("a changed host key: refused before signing in, nothing written", async () => {
    const account = await buyer("fault-sftp-hostkey");
    const order = await orderWith(account.id, { "data.bin": randomBytes(1000) });
    const { id } = await createDestination(
      account.id,
      { name: "pinned", type: "sftp", fields: sftpFields() },
      OPERATOR,
    );
    const before = await sftp.files();
    await sftp.changeHostKey();
    const [run] = await exportNow({ orderId: order.id, destinationId: id });
    const outcome = await runExport(run!.id);
    await reportFault("export-sftp-host-key-changed", { outcome: outcome.result });
    expect(outcome).toMatchObject({
      result: "retry",
      error: expect.stringMatching(/host key is SHA256:.*not the pinned/),
    });
    expect(await sftp.files()).toEqual(before);
  });
});
