import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createDestination } from "../../lib/exports/destinations";
import { exportNow } from "../../lib/exports/run-now";
import { closeJobQueue } from "../../lib/queue";
import { OPERATOR } from "../../lib/security/log";
import { processPendingNow } from "../../lib/tables/pipeline";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { sha256 } from "./stores";

/**
 * Where `_manifest.json` goes, run by the production server's own worker into s3rver: never over a
 * delivered file of that name, and, for a run with no files, in the order's folder rather than at
 * the top where every order's run would replace the last one's.
 */

const LAKE = "manifest-lake";

let env: TestEnvironment;
let s3: TestS3;
let server: TestServer;

beforeAll(async () => {
  env = await createTestEnvironment("exports_manifest");
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE] });
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
    env: { REDIS_URL: "", EXPORT_SECRETS_KEY: secretsKey, EXPORT_ALLOW_PRIVATE: "true" },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await closeJobQueue();
  await s3?.stop();
  await env?.cleanup();
});

async function destinationFor(buyerId: string, prefix: string, template?: string) {
  return createDestination(
    buyerId,
    {
      name: "lake",
      type: "s3",
      ...(template ? { template } : {}),
      fields: {
        bucket: LAKE,
        region: "us-east-1",
        endpoint: s3.endpoint,
        force_path_style: true,
        prefix: `${prefix}/`,
        access_key_id: "S3RVER",
        secret_access_key: "S3RVER",
      },
    },
    OPERATOR,
  );
}

type RunOverHttp = { state: string; files: number; manifest_key: string | null; error: string | null };

/** Exports the order now, waits for the worker to end the run, and reads the run over HTTP. */
async function exported(buyerId: string, orderId: string, destinationId: string): Promise<RunOverHttp> {
  const [run] = await exportNow({ orderId, destinationId });
  const ended = async () => {
    const { state } = await db().exportRun.findUniqueOrThrow({ where: { id: run!.id }, select: { state: true } });
    return state === "completed" || state === "failed";
  };
  await waitFor(ended, 120_000, "the run to end");
  const key = (await apiKey(buyerId)).secret;
  const response = await fetch(`${server.url}/api/v1/exports/${run!.id}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as RunOverHttp;
}

const manifestAt = async (key: string) =>
  JSON.parse((await s3.objectBytes(key, LAKE)).toString()) as { files: { key: string; sha256: string }[] };

describe("the manifest", () => {
  it("never replaces a delivered file named _manifest.json", { timeout: 180_000 }, async () => {
    const account = await buyer("manifest-named");
    const theirs = Buffer.from('[{"id": 1, "name": "the buyer\'s own manifest"}]\n');
    const delivered = await order(account.id, { files: { "_manifest.json": theirs, "a.bin": randomBytes(100) } });
    // A JSON file is a table's part: exported once it is published.
    const published = async () => {
      const file = await db().orderFile.findFirstOrThrow({
        where: { orderId: delivered.id, name: "_manifest.json" },
        select: { publication: { select: { status: true } } },
      });
      if (file.publication?.status === "failed") throw new Error("the JSON file's publication failed");
      return file.publication?.status === "ready";
    };
    await processPendingNow();
    await waitFor(published, 120_000, "the JSON file's publication");
    // Every file in the order's folder, beside the manifest.
    const destination = await destinationFor(account.id, "named", "{order_id}/{file_name}");
    const run = await exported(account.id, delivered.id, destination.id);
    expect(run).toMatchObject({ state: "completed", files: 2, manifest_key: `named/${delivered.id}/_manifest.json` });
    const manifest = await manifestAt(run.manifest_key!);
    const listed = manifest.files.find((file) => file.sha256 === sha256(theirs));
    expect(listed?.key).not.toBe(run.manifest_key);
    expect(sha256(await s3.objectBytes(listed!.key, LAKE))).toBe(sha256(theirs));
  });

  it("of a run with no files is written in its order's folder, not at the top", { timeout: 180_000 }, async () => {
    const account = await buyer("manifest-empty");
    const destination = await destinationFor(account.id, "empty");
    const first = await order(account.id, { name: "first" });
    const second = await order(account.id, { name: "second" });
    const runs = [
      await exported(account.id, first.id, destination.id),
      await exported(account.id, second.id, destination.id),
    ];
    expect(runs.map((run) => [run.state, run.files, run.manifest_key])).toEqual([
      ["completed", 0, `empty/${first.id}/_manifest.json`],
      ["completed", 0, `empty/${second.id}/_manifest.json`],
    ]);
    const keys = (await s3.objectKeys(LAKE)).filter((key) => key.startsWith("empty/"));
    expect(keys.sort()).toEqual([`empty/${first.id}/_manifest.json`, `empty/${second.id}/_manifest.json`].sort());
  });
});
