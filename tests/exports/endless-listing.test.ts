import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import net, { type AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createDestination } from "../../lib/exports/destinations";
import { exportNow } from "../../lib/exports/run-now";
import { LISTING_MAX_PAGES } from "../../lib/exports/targets/listing";
import { closeJobQueue } from "../../lib/queue";
import { OPERATOR } from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { startEndlessListingStore, type EndlessListingStore } from "./endless-listing-store";
import { AZURITE_KEY, startTestAzurite, startTestSftp, type TestAzurite, type TestSftp } from "./stores";

/**
 * Stores that list forever, met by the production server's own job worker (EXPORT_CONCURRENCY=2):
 * S3 answering every listing with IsTruncated, a new token and no keys; Azure empty pages with a
 * new marker; an SFTP server whose readdir sends the same names and folders again and again. Each
 * listing is given up at its bounds and the run goes on file by file to completion; meanwhile
 * another buyer's run, to a good store, completes within a minute, whatever the hostile store does.
 */

const LAKE = "lake";
/** Enough files in one folder for the run to list it rather than ask file by file. */
const FILES = 10;

let env: TestEnvironment;
let s3: TestS3;
let azurite: TestAzurite;
let sftp: TestSftp;
let server: TestServer;
const hostile: EndlessListingStore[] = [];

beforeAll(async () => {
  env = await createTestEnvironment("exports_endless_listing");
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE] });
  azurite = await startTestAzurite();
  sftp = await startTestSftp();
  await azurite.createContainer(LAKE);
  await fs.mkdir(path.join(sftp.root, "upload"));
  const secretsKey = randomBytes(32).toString("base64");
  Object.assign(process.env, {
    STORAGE_DRIVER: "local",
    AUTH_SECRET: TEST_AUTH_SECRET,
    EXPORT_SECRETS_KEY: secretsKey,
    EXPORT_ALLOW_PRIVATE: "true",
  });
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      EXPORT_SECRETS_KEY: secretsKey,
      EXPORT_ALLOW_PRIVATE: "true",
      EXPORT_CONCURRENCY: "2",
      // A request given up after 3 s of silence, an attempt after 6 s without moving.
      EXPORT_STALL_TIMEOUT_MS: "3000",
    },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  for (const store of hostile) await store.close();
  await closeJobQueue();
  await Promise.allSettled([s3?.stop(), azurite?.stop(), sftp?.stop()]);
  await env?.cleanup();
});

/** A delivered order of FILES small files, all in one folder of the store. */
async function orderOfFiles(buyerId: string, label: string) {
  const files = Object.fromEntries(
    Array.from({ length: FILES }, (_, i) => [`${label}-${i}.bin`, randomBytes(1000 + i)]),
  );
  return order(buyerId, { name: label, files });
}

const s3Fields = (endpoint: string, prefix: string) => ({
  bucket: LAKE,
  region: "us-east-1",
  endpoint,
  force_path_style: true,
  prefix: `${prefix}/`,
  access_key_id: "S3RVER",
  secret_access_key: "S3RVER",
});

/** The run as the API shows it to its buyer. */
async function runOverHttp(
  key: string,
  runId: string,
): Promise<{ state: string; files: number; error: string | null }> {
  const response = await fetch(`${server.url}/api/v1/exports/${runId}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { state: string; files: number; error: string | null };
}

/** Waits for the run to end (watched in the database: polling the API would meet its rate limit), then reads it over HTTP. */
async function completed(key: string, runId: string, withinMs: number, what: string) {
  const ended = async () => {
    const run = await db().exportRun.findUniqueOrThrow({ where: { id: runId }, select: { state: true } });
    return run.state === "completed" || run.state === "failed";
  };
  await waitFor(ended, withinMs, what);
  return runOverHttp(key, runId);
}

describe("stores that list forever", () => {
  it(
    "S3: another buyer's run completes within a minute, and the hostile runs complete file by file",
    { timeout: 300_000 },
    async () => {
      const store = await startEndlessListingStore("s3", s3.endpoint);
      hostile.push(store);
      const attacker = await buyer("endless-s3");
      const attackerKey = (await apiKey(attacker.id)).secret;
      const destination = await createDestination(
        attacker.id,
        { name: "endless", type: "s3", fields: s3Fields(store.origin, "endless") },
        OPERATOR,
      );
      // Two runs of the one hostile destination: as many as the worker has export loops.
      const hostileRuns = [];
      for (const label of ["first", "second"]) {
        const { id } = await orderOfFiles(attacker.id, label);
        hostileRuns.push(...(await exportNow({ orderId: id, destinationId: destination.id })));
      }
      await waitFor(() => store.listings() > 0, 60_000, "the hostile store to be listed");

      const other = await buyer("endless-other");
      const otherKey = (await apiKey(other.id)).secret;
      const good = await createDestination(
        other.id,
        { name: "good", type: "s3", fields: s3Fields(s3.endpoint, "good") },
        OPERATOR,
      );
      const { id: otherOrder } = await order(other.id, { files: { "a.bin": randomBytes(100) } });
      const [otherRun] = await exportNow({ orderId: otherOrder, destinationId: good.id });
      const done = await completed(otherKey, otherRun!.id, 60_000, "the other buyer's run to complete");
      expect(done).toMatchObject({ state: "completed", files: 1, error: null });

      for (const run of hostileRuns) {
        expect(await completed(attackerKey, run.id, 120_000, "the hostile run")).toMatchObject({
          state: "completed",
          files: FILES,
        });
      }
      // Each attempt gave its listing up at the page bound.
      expect(store.listings()).toBeLessThanOrEqual(hostileRuns.length * (LISTING_MAX_PAGES + 1));
    },
  );

  it("Azure: empty pages with a marker forever are given up, and the run completes", { timeout: 180_000 }, async () => {
    const store = await startEndlessListingStore("azure", new URL(azurite.accountUrl).origin);
    hostile.push(store);
    const account = await buyer("endless-azure");
    const key = (await apiKey(account.id)).secret;
    const destination = await createDestination(
      account.id,
      {
        name: "endless",
        type: "azure",
        fields: {
          account_url: `${store.origin}${new URL(azurite.accountUrl).pathname}`,
          container: LAKE,
          prefix: "endless",
          account_key: AZURITE_KEY,
        },
      },
      OPERATOR,
    );
    const { id: orderId } = await orderOfFiles(account.id, "azure");
    const [run] = await exportNow({ orderId, destinationId: destination.id });
    expect(await completed(key, run!.id, 120_000, "the Azure run")).toMatchObject({ state: "completed", files: FILES });
    expect(store.listings()).toBeGreaterThan(0);
    expect(store.listings()).toBeLessThanOrEqual(LISTING_MAX_PAGES + 1);
  });

  it(
    "SFTP: a readdir that repeats names and folders forever is given up, and the run completes",
    { timeout: 180_000 },
    async () => {
      sftp.faults.endlessReaddir = { batches: 0 };
      const account = await buyer("endless-sftp");
      const key = (await apiKey(account.id)).secret;
      const destination = await createDestination(
        account.id,
        {
          name: "endless",
          type: "sftp",
          fields: {
            host: sftp.host,
            port: sftp.port,
            username: sftp.username,
            password: sftp.password,
            directory: "/upload",
            host_key_sha256: sftp.fingerprint(),
          },
        },
        OPERATOR,
      );
      const { id: orderId } = await orderOfFiles(account.id, "sftp");
      // The run's folder exists (an earlier run made it), so the run lists it.
      await fs.mkdir(path.join(sftp.root, "upload", orderId));
      const [run] = await exportNow({ orderId, destinationId: destination.id });
      expect(await completed(key, run!.id, 120_000, "the SFTP run")).toMatchObject({
        state: "completed",
        files: FILES,
      });
      expect(sftp.faults.endlessReaddir.batches).toBeGreaterThan(0);
      expect(sftp.faults.endlessReaddir.batches).toBeLessThanOrEqual(LISTING_MAX_PAGES + 1);
      sftp.faults.endlessReaddir = undefined;
    },
  );
});

describe("a store that answers forever without moving", () => {
  it(
    "an S3 check answered a header line at a time, forever: the attempt is stopped and its lease let go",
    { timeout: 180_000 },
    async () => {
      // Every request gets a status line, then a header line every 300 ms and never an end: no socket is ever idle.
      const sockets = new Set<net.Socket>();
      const trickle = net.createServer((socket) => {
        sockets.add(socket);
        socket.on("error", () => {});
        socket.once("data", () => {
          socket.write("HTTP/1.1 200 OK\r\n");
          const timer = setInterval(() => socket.write("X-Trickle: 1\r\n"), 300);
          socket.on("close", () => clearInterval(timer));
        });
      });
      await new Promise<void>((resolve) => trickle.listen(0, "127.0.0.1", resolve));
      try {
        const account = await buyer("trickle");
        const key = (await apiKey(account.id)).secret;
        const origin = `http://127.0.0.1:${(trickle.address() as AddressInfo).port}`;
        const destination = await createDestination(
          account.id,
          { name: "trickle", type: "s3", fields: s3Fields(origin, "trickle") },
          OPERATOR,
        );
        const { id: orderId } = await order(account.id, { files: { "a.bin": randomBytes(100) } });
        const [run] = await exportNow({ orderId, destinationId: destination.id });
        // Stopped by whichever bound comes first: the SDK's time limit on a whole request (two tries of the
        // stall timeout) or, past it, the attempt's idle limit (three stall timeouts).
        const stoppedBy = /nothing moved for \d+ s|exceeded the configured \d+ ms requestTimeout/;
        const stopped = async () => {
          const row = await db().exportRun.findUniqueOrThrow({ where: { id: run!.id }, select: { error: true } });
          return stoppedBy.test(row.error ?? "");
        };
        await waitFor(stopped, 120_000, "the attempt to be stopped");
        const seen = await runOverHttp(key, run!.id);
        expect(seen.error).toMatch(stoppedBy);
        // Recorded as a failed attempt, retried on the schedule (5 s later: it may be running again already).
        expect(["pending", "running"]).toContain(seen.state);
      } finally {
        for (const socket of sockets) socket.destroy();
        trickle.close();
      }
    },
  );
});
