import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";

/** The bucket the tests' S3-compatible store starts with; s3rver's own fixed credentials. */
export const TEST_BUCKET = "deliveries";
export const OTHER_BUCKET = "seller-uploads";
const CREDENTIALS = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" };

export type TestS3 = {
  endpoint: string;
  env: Record<string, string>;
  /** The keys of the objects in a bucket, read from the store's directory (s3rver's ListObjects refuses the current SDK's signature). */
  objectKeys: (bucket?: string) => Promise<string[]>;
  /** An object's bytes, read from the store's directory. */
  objectBytes: (key: string, bucket?: string) => Promise<Buffer>;
  /** Puts an object into a bucket, as a seller's own tooling would. */
  putObject: (key: string, body: Buffer, options?: { bucket?: string; contentType?: string }) => Promise<void>;
  /** Parts received for multipart uploads not yet completed (invisible as objects), from the store's directory. */
  uploadedParts: (bucket?: string) => Promise<string[]>;
  /** Stops the store (SIGTERM, or SIGKILL to stop it dead mid-request). */
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

const OBJECT_SUFFIX = "._S3rver_object";

/**
 * An S3-compatible store on loopback for the tests: @20minutes/s3rver (tests/helpers/s3-server.ts,
 * a process of its own), which verifies SigV4 signatures (a tampered or expired presigned URL is refused). Its buckets are made at start (its
 * CreateBucket refuses the current SDK's signature). `env` is what the app needs to use it, through
 * exactly the production code path; s3rver needs the SDK's default checksums off
 * (S3_CHECKSUMS=when_required), as many S3-compatible stores do.
 */
export async function startTestS3({
  buckets = [TEST_BUCKET, OTHER_BUCKET],
  directory: given,
}: { buckets?: string[]; directory?: string } = {}): Promise<TestS3> {
  const directory = given ?? (await fs.mkdtemp(path.join(os.tmpdir(), "test-s3-")));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.resolve("tests/helpers/s3-server.ts"), directory, ...buckets],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`The test S3 store exited (${code}).`)));
    createInterface({ input: child.stdout! }).once("line", (line) =>
      resolve((JSON.parse(line) as { port: number }).port),
    );
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    env: {
      STORAGE_DRIVER: "s3",
      S3_BUCKET: TEST_BUCKET,
      S3_ENDPOINT: endpoint,
      S3_REGION: "us-east-1",
      S3_FORCE_PATH_STYLE: "true",
      S3_CHECKSUMS: "when_required",
      ...CREDENTIALS,
    },
    objectKeys: async (bucket = TEST_BUCKET) => {
      const root = path.join(directory, bucket);
      const entries = await fs.readdir(root, { recursive: true });
      return entries
        .filter((entry) => entry.endsWith(OBJECT_SUFFIX))
        .map((entry) => entry.slice(0, -OBJECT_SUFFIX.length))
        .sort();
    },
    objectBytes: (key, bucket = TEST_BUCKET) => fs.readFile(path.join(directory, bucket, key + OBJECT_SUFFIX)),
    putObject: async (
      key,
      body,
      { bucket = TEST_BUCKET, contentType }: { bucket?: string; contentType?: string } = {},
    ) => {
      const client = new S3Client({
        region: "us-east-1",
        endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: CREDENTIALS.AWS_SECRET_ACCESS_KEY },
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
      });
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
      client.destroy();
    },
    uploadedParts: async (bucket = TEST_BUCKET) => {
      const uploads = path.join(directory, bucket, "._S3rver_uploads");
      const entries = await fs.readdir(uploads, { recursive: true }).catch(() => []);
      return entries.filter((entry) => /\/\d+$/.test(entry));
    },
    stop: async (signal: NodeJS.Signals = "SIGTERM") => {
      if (child.exitCode === null) {
        await new Promise((resolve) => {
          child.once("exit", resolve);
          child.kill(signal);
        });
      }
      // A store restarted on a directory it was given keeps it (a fault test stops it mid-upload and starts it again).
      if (!given) await fs.rm(directory, { recursive: true, force: true });
    },
  };
}
