import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { setOrderStatus } from "../../lib/operator/orders";
import { createShareLink } from "../../lib/share-links";
import { datasetJobsDone } from "../datasets/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { OTHER_BUCKET, startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { startServer, type TestServer } from "../helpers/server";

/**
 * Object storage (STORAGE_DRIVER=s3) against an S3-compatible store on loopback that verifies
 * signatures (@20minutes/s3rver): downloads are presigned redirects straight to the store, the
 * operator uploads and registers objects and migrates local files, and interruptions leave nothing.
 */

let env: TestEnvironment;
let s3: TestS3;
let store: S3Client;
let server: TestServer;

const sha256 = (bytes: Buffer | Uint8Array) => createHash("sha256").update(bytes).digest("hex");
// Over one 8 MiB multipart part, so uploads are multipart.
const big = randomBytes(20 * 1024 * 1024 + 3);

let key: string;
let delivered: Awaited<ReturnType<typeof order>>;
let account: { id: string };

beforeAll(async () => {
  s3 = await startTestS3();
  Object.assign(process.env, s3.env);
  env = await createTestEnvironment("s3_storage");
  // The test's own client, as an operator's tooling would be.
  store = new S3Client({
    region: "us-east-1",
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  account = await buyer("s3");
  // Binary files, listed at once: a data file added on its own is a table's publication, which no
  // buyer sees until it is a version (contract Part 8; tests/tables/unseen.test.ts).
  delivered = await order(account.id, { files: { "prices.bin": big, "données 2026.bin": Buffer.from("a,b\n") } });
  key = (await apiKey(account.id)).secret;
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: s3.env });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  await s3?.stop();
});

const api = (pathAndQuery: string) =>
  fetch(`${server.url}/api/v1${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` }, redirect: "manual" });

const objectKeys = (bucket?: string) => s3.objectKeys(bucket);

async function presignedLocation(orderId: string, fileId: string): Promise<URL> {
  const response = await api(`/orders/${orderId}/files/${fileId}`);
  expect(response.status).toBe(302);
  return new URL(response.headers.get("location")!);
}

describe("downloads from object storage", () => {
  it("stores uploads in the bucket, multipart, with the file's sha256", async () => {
    const rows = await db().orderFile.findMany({ where: { orderId: delivered.id } });
    expect(rows.map((row) => row.storageKey)).toEqual(
      // A file of no table is named by a random id under its order (a table's part by its publication and name).
      rows.map(() => expect.stringMatching(new RegExp(`^s3://${TEST_BUCKET}/ord_[0-9a-f]{32}/[0-9a-f-]{36}$`))),
    );
    expect(delivered.files.find((file) => file.name === "prices.bin")!.sha256).toBe(sha256(big));
  });

  it("redirects the API download to a presigned GET of the store, valid at most 5 minutes", async () => {
    const file = delivered.files.find((f) => f.name === "prices.bin")!;
    const location = await presignedLocation(delivered.id, file.id);
    expect(location.origin).toBe(s3.endpoint);
    expect(Number(location.searchParams.get("X-Amz-Expires"))).toBeLessThanOrEqual(300);

    const whole = await fetch(location);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-disposition")).toBe(
      `attachment; filename="prices.bin"; filename*=UTF-8''prices.bin`,
    );
    expect(whole.headers.get("content-type")).toBe("application/octet-stream");
    expect(whole.headers.get("content-length")).toBe(String(big.length));
    const etag = whole.headers.get("etag");
    expect(etag).toMatch(/^".+"$/);
    expect(sha256(Buffer.from(await whole.arrayBuffer()))).toBe(file.sha256);

    // Range and a resumed download, served by the store.
    const first = await fetch(location, { headers: { Range: "bytes=0-999" } });
    expect(first.status).toBe(206);
    expect(first.headers.get("content-range")).toBe(`bytes 0-999/${big.length}`);
    const rest = await fetch(location, { headers: { Range: "bytes=1000-" } });
    expect(rest.status).toBe(206);
    const joined = Buffer.concat([Buffer.from(await first.arrayBuffer()), Buffer.from(await rest.arrayBuffer())]);
    expect(sha256(joined)).toBe(file.sha256);
    expect(rest.headers.get("etag")).toBe(etag);
  });

  it("names a non-ASCII file exactly, in filename*", async () => {
    const file = delivered.files.find((f) => f.name === "données 2026.bin")!;
    const response = await fetch(await presignedLocation(delivered.id, file.id));
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="donn_es 2026.bin"; filename*=UTF-8''donn%C3%A9es%202026.bin`,
    );
    expect(await response.text()).toBe("a,b\n");
  });

  it("is refused by the store when tampered with or expired", async () => {
    const file = delivered.files[0]!;
    const location = await presignedLocation(delivered.id, file.id);
    const tampered = new URL(location);
    tampered.searchParams.set("response-content-disposition", 'attachment; filename="other.exe"');
    expect((await fetch(tampered)).status).toBe(403);
    const longer = new URL(location);
    longer.searchParams.set("X-Amz-Expires", "604800");
    expect((await fetch(longer)).status).toBe(403);
    // Signed ten minutes ago for five minutes: expired.
    const { GetObjectCommand } = await import("@aws-sdk/client-s3");
    const { getSignedUrl } = await import("@aws-sdk/s3-request-presigner");
    const [bucket, ...objectKey] = location.pathname.slice(1).split("/");
    const expired = await getSignedUrl(store, new GetObjectCommand({ Bucket: bucket, Key: objectKey.join("/") }), {
      expiresIn: 300,
      signingDate: new Date(Date.now() - 600_000),
    });
    expect((await fetch(expired)).status).toBe(403);
  });

  it("checks the order's status when the link is issued", async () => {
    const refunded = await order(account.id, { files: { "r.txt": Buffer.from("r\n") } });
    await setOrderStatus(refunded.id, "refunded");
    await expectProblem(await api(`/orders/${refunded.id}/files/${refunded.files[0]!.id}`), 409, "order_not_delivered");
  });

  it("sends share-link downloads straight to the store too", async () => {
    const link = await createShareLink({ buyerId: account.id, orderId: delivered.id, expiry: 7 });
    const file = delivered.files[0]!;
    const response = await fetch(`${server.url}/share/${link.token}/files/${file.id}`, { redirect: "manual" });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get("location")!);
    expect(location.origin).toBe(s3.endpoint);
    expect(sha256(Buffer.from(await (await fetch(location)).arrayBuffer()))).toBe(file.sha256);
  });
});

type Run = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** The operator CLI, as `npm run admin` runs it, against the test database and store. */
/**
 * Sends `signal` to `child` once `condition` holds, checked every 20 ms, one check at a time. Checks that
 * overlapped (a slow store under load) each sent the signal, and a second SIGINT ends the CLI at once by
 * design, so the interrupted upload's own exit (130) was never seen.
 */
function killOnceWhen(child: ReturnType<typeof spawn>, signal: NodeJS.Signals, condition: () => Promise<boolean>) {
  let exited = false;
  child.on("exit", () => (exited = true));
  const check = async () => {
    if (exited) return;
    if (await condition()) child.kill(signal);
    else setTimeout(check, 20);
  };
  setTimeout(check, 20);
}

function admin(
  args: string[],
  options: { extraEnv?: Record<string, string>; onStart?: (child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("scripts/admin.ts"), ...args], {
      env: {
        ...process.env,
        ...s3.env,
        DATABASE_URL: env.database.url,
        STORAGE_DIR: env.storageDir,
        ...options.extraEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    options.onStart?.(child);
    child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe("order:add-file with object storage", () => {
  it("registers an object already in a bucket without copying it", async () => {
    const target = await order(account.id, { files: {} });
    const bytes = randomBytes(300_000);
    await s3.putObject("exports/2026/listings.bin", bytes, {
      bucket: OTHER_BUCKET,
      contentType: "application/x-ndjson",
    });
    // Renditions of earlier tests' files are written by the server's worker: wait for them first.
    await datasetJobsDone();
    const before = await objectKeys();
    const run = await admin([
      "order:add-file",
      "--order",
      target.id,
      "--from",
      `s3://${OTHER_BUCKET}/exports/2026/listings.bin`,
      "--json",
    ]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const added = JSON.parse(run.stdout);
    expect(added).toMatchObject({
      name: "listings.bin",
      size: bytes.length,
      sha256: sha256(bytes),
      content_type: "application/x-ndjson",
    });
    // Nothing copied: the only objects the order may gain are what the worker derives from files, never
    // the file's bytes again. (A binary file: a data file would be unseen until its version is made.)
    const gained = (await objectKeys()).filter((key) => !before.includes(key));
    expect(gained.every((key) => key.startsWith(`${target.id}/`))).toBe(true);
    for (const key of gained) expect(sha256(await s3.objectBytes(key))).not.toBe(sha256(bytes));
    const row = await db().orderFile.findUniqueOrThrow({ where: { id: added.id } });
    expect(row.storageKey).toBe(`s3://${OTHER_BUCKET}/exports/2026/listings.bin`);
    const location = await presignedLocation(target.id, added.id);
    expect(sha256(Buffer.from(await (await fetch(location)).arrayBuffer()))).toBe(sha256(bytes));
  });

  it.each([
    ["a missing object", `s3://${OTHER_BUCKET}/nope.csv`, {}, /No object at s3:\/\/seller-uploads\/nope\.csv/],
    ["a missing bucket", "s3://no-such-bucket/data.csv", {}, /s3:\/\/no-such-bucket\/data\.csv/],
    [
      "denied access",
      `s3://${OTHER_BUCKET}/exports/2026/listings.bin`,
      { AWS_SECRET_ACCESS_KEY: "wrong" },
      /Access to s3:\/\/seller-uploads\/exports\/2026\/listings\.bin was denied/,
    ],
    ["not an S3 location", "https://example.com/x.csv", {}, /not an S3 location/],
  ])("refuses %s with a clear error naming it, and records nothing", async (_case, from, extraEnv, message) => {
    const target = await order(account.id, { files: {} });
    const run = await admin(["order:add-file", "--order", target.id, "--from", from], { extraEnv });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(message);
    expect(await db().orderFile.count({ where: { orderId: target.id } })).toBe(0);
  });

  it("refuses both or neither of --path and --from", async () => {
    const run = await admin(["order:add-file", "--order", delivered.id]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/exactly one of --path FILE or --from/);
  });

  it.each(["SIGINT", "SIGKILL"] as const)(
    "leaves no row and no visible object when an upload is interrupted (%s)",
    async (signal) => {
      const target = await order(account.id, { files: {} });
      // 1 GiB (sparse: instant, and no disk used): the upload is still under way when the signal arrives.
      const file = path.join(env.storageDir, `upload-${signal}.bin`);
      await fs.writeFile(file, "");
      await fs.truncate(file, 1024 ** 3);
      await datasetJobsDone();
      const before = await objectKeys();
      const partsBefore = (await s3.uploadedParts()).length;
      const run = await admin(["order:add-file", "--order", target.id, "--path", file, "--name", "big.bin"], {
        // Interrupted once the store has received a part: the upload is under way.
        onStart: (child) => killOnceWhen(child, signal, async () => (await s3.uploadedParts()).length > partsBefore),
      });
      await fs.rm(file);
      if (signal === "SIGINT") {
        expect(run.code).toBe(130);
        expect(run.stderr).toMatch(/interrupted; nothing was stored/);
      } else {
        expect(run.signal).toBe("SIGKILL");
      }
      expect(await db().orderFile.count({ where: { orderId: target.id } })).toBe(0);
      expect(await objectKeys()).toEqual(before);
    },
  );
});

describe("storage:migrate --to s3", () => {
  it("copies every local file, verified, resumes after a kill, and switches the rows", async () => {
    const local = { ...s3.env, STORAGE_DRIVER: "local" };
    const target = await order(account.id, { files: {} });
    const contents = Array.from({ length: 12 }, () => randomBytes(3 * 1024 * 1024));
    for (const [index, bytes] of contents.entries()) {
      const file = path.join(env.storageDir, `source-${index}.bin`);
      await fs.writeFile(file, bytes);
      const added = await admin(["order:add-file", "--order", target.id, "--path", file, "--json"], {
        extraEnv: local,
      });
      expect(added.code).toBe(0);
    }
    const localRows = () =>
      db().orderFile.findMany({ where: { orderId: target.id, NOT: { storageKey: { startsWith: "s3://" } } } });
    const localKeys = (await localRows()).map((row) => row.storageKey);
    expect(localKeys).toHaveLength(12);

    const dryRun = await admin(["storage:migrate", "--to", "s3", "--dry-run", "--json"]);
    expect(dryRun.code).toBe(0);
    const plan = JSON.parse(dryRun.stdout);
    expect(plan).toMatchObject({ dry_run: true, migrated: 0 });
    expect(plan.planned.length).toBeGreaterThanOrEqual(12);
    expect(await localRows()).toHaveLength(12);

    // Killed once the first rows have switched.
    const killed = await admin(["storage:migrate", "--to", "s3", "--json"], {
      onStart: (child) => killOnceWhen(child, "SIGKILL", async () => (await localRows()).length <= 10),
    });
    expect(killed.signal).toBe("SIGKILL");
    const remainingKeys = (await localRows()).map((row) => row.storageKey);
    const remaining = remainingKeys.length;
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThan(12);

    const resumed = await admin(["storage:migrate", "--to", "s3", "--json"]);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      dry_run: false,
      failed: [],
      total: remaining,
      migrated: remaining,
    });
    expect(await localRows()).toHaveLength(0);

    // Every file is served from the store with its bytes, and the local copies are gone.
    const files = await db().orderFile.findMany({ where: { orderId: target.id }, orderBy: { createdAt: "asc" } });
    for (const [index, file] of files.entries()) {
      expect(file.storageKey).toMatch(new RegExp(`^s3://${TEST_BUCKET}/`));
      const location = await presignedLocation(target.id, file.id);
      expect(sha256(Buffer.from(await (await fetch(location)).arrayBuffer()))).toBe(sha256(contents[index]!));
    }
    // The resumed run deleted the local copies it replaced. (One the kill caught between switching
    // its row and deleting it may remain, unreferenced: see the README.)
    for (const storageKey of remainingKeys) {
      await expect(fs.access(path.join(env.storageDir, storageKey))).rejects.toThrow();
    }
    const leftOver = await Promise.all(
      localKeys.map((storageKey) =>
        fs.access(path.join(env.storageDir, storageKey)).then(
          () => 1,
          () => 0,
        ),
      ),
    );
    expect(leftOver.reduce((sum: number, found) => sum + found, 0)).toBeLessThanOrEqual(1);
  }, 180_000); // fifteen CLI runs
});
