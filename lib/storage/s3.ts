import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { AppError } from "../errors";
import { processSingleton } from "../singleton";
import {
  measuringStream,
  objectName,
  unlessInterrupted,
  type FileStorage,
  type PutOptions,
  type StoredObject,
} from "./objects";

/**
 * S3-compatible object storage (AWS S3, R2, GCS interop, MinIO, Ceph): STORAGE_DRIVER=s3 with
 * S3_BUCKET, S3_REGION (us-east-1), S3_ENDPOINT (unset: AWS), S3_FORCE_PATH_STYLE, S3_PREFIX and
 * S3_CHECKSUMS; credentials from the AWS SDK's standard chain (AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, profiles, instance roles). A stored file's location is `s3://bucket/key`,
 * so files registered from another bucket (order:add-file --from) are served the same way.
 */
export type S3Settings = {
  bucket: string | undefined;
  region: string;
  endpoint: string | undefined;
  forcePathStyle: boolean;
  prefix: string;
  /** The SDK's default CRC checksums, or only where the API requires one (what many S3-compatible stores need). */
  checksums: "when_supported" | "when_required";
};

type Env = Record<string, string | undefined>;

export function s3Settings(env: Env = process.env): S3Settings {
  const checksums = (env.S3_CHECKSUMS || "when_supported").toLowerCase();
  if (checksums !== "when_supported" && checksums !== "when_required") {
    throw new AppError(
      "storage_not_configured",
      `S3_CHECKSUMS must be when_supported or when_required, not "${checksums}".`,
    );
  }
  const forcePathStyle = (env.S3_FORCE_PATH_STYLE || "false").toLowerCase();
  if (forcePathStyle !== "true" && forcePathStyle !== "false") {
    throw new AppError("storage_not_configured", `S3_FORCE_PATH_STYLE must be true or false, not "${forcePathStyle}".`);
  }
  return {
    bucket: env.S3_BUCKET || undefined,
    region: env.S3_REGION || "us-east-1",
    endpoint: env.S3_ENDPOINT || undefined,
    forcePathStyle: forcePathStyle === "true",
    prefix: env.S3_PREFIX ?? "",
    checksums,
  };
}

/**
 * The AWS SDK, loaded on first use: a process that never touches S3 (most operator CLI commands, with local
 * storage) does not pay its load, about 0.25 CPU-seconds (issue #38).
 */
const awsSdk = () => import("@aws-sdk/client-s3");

/** The S3 client of this process, made from the environment on first use. */
export async function s3Client(): Promise<S3Client> {
  const { S3Client } = await awsSdk();
  return processSingleton("storage:s3-client", () => {
    const settings = s3Settings();
    const checksums = settings.checksums === "when_required" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED";
    return new S3Client({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      requestChecksumCalculation: checksums,
      responseChecksumValidation: checksums,
    });
  });
}

const LOCATION = /^s3:\/\/([^/]+)\/(.+)$/;

export function isS3Location(location: string): boolean {
  return LOCATION.test(location);
}

export function parseS3Location(location: string): { bucket: string; key: string } {
  const match = LOCATION.exec(location);
  if (!match) {
    throw new AppError("invalid_argument", `"${location}" is not an S3 location (s3://bucket/key).`);
  }
  return { bucket: match[1]!, key: match[2]! };
}

export function s3Location(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/** Multipart parts: 8 MiB, four in flight, so an upload holds about 40 MB whatever the file's size. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;

/** New files go to S3_BUCKET under S3_PREFIX. */
export class S3Storage implements FileStorage {
  readonly driver = "s3";
  private readonly bucket: string;

  constructor(private readonly settings: S3Settings = s3Settings()) {
    if (!settings.bucket) {
      throw new AppError(
        "storage_not_configured",
        "STORAGE_DRIVER=s3 needs S3_BUCKET (and credentials, S3_ENDPOINT for a store that is not AWS).",
      );
    }
    this.bucket = settings.bucket;
  }

  /** A key of this bucket under S3_PREFIX. */
  prefixedKey(key: string): string {
    return `${this.settings.prefix}${key}`;
  }

  location(key: string): string {
    return s3Location(this.bucket, key);
  }

  /** New files become `<prefix><order id>/<uuid>` (or the name asked for). */
  put(source: Readable, keyHint: string, options: PutOptions = {}): Promise<StoredObject> {
    const key = this.prefixedKey(`${keyHint.replace(/[^A-Za-z0-9_-]/g, "_") || "object"}/${objectName(options)}`);
    return this.putAt(key, source, options);
  }

  /**
   * Uploads `source` to `key` of the bucket with a multipart upload, hashing on the way; memory
   * stays flat. On any failure or abort the multipart upload is aborted, so nothing becomes visible.
   */
  async putAt(key: string, source: Readable, options: PutOptions = {}): Promise<StoredObject> {
    const { stream: measure, measured } = measuringStream();
    const body = new PassThrough();
    const { Upload } = await import("@aws-sdk/lib-storage");
    const upload = new Upload({
      client: await s3Client(),
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: options.contentType },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await unlessInterrupted(Promise.all([upload.done(), pipeline(source, measure, body)]), options.signal);
    } catch (error) {
      // Nothing may become visible: the multipart upload is aborted (its parts are dropped).
      source.destroy();
      body.destroy();
      await upload.abort().catch(() => {});
      throw storageError(error, s3Location(this.bucket, key));
    }
    return { key: s3Location(this.bucket, key), ...measured() };
  }

  async delete(location: string): Promise<void> {
    const { bucket, key } = parseS3Location(location);
    const { DeleteObjectCommand } = await awsSdk();
    await (await s3Client()).send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  }
}

/** The object's bytes, streamed (GetObject). A missing object or denied access is an AppError naming it. */
export async function readS3Object(location: string): Promise<{ body: Readable; contentType?: string }> {
  const { bucket, key } = parseS3Location(location);
  try {
    const { GetObjectCommand } = await awsSdk();
    const object = await (await s3Client()).send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { body: object.Body as Readable, contentType: object.ContentType };
  } catch (error) {
    throw storageError(error, location);
  }
}

/**
 * A presigned GET of the object, valid `expiresInSeconds`, that makes the store send the file's
 * name as an attachment and its content type. Signed for GET only (HEAD needs its own signature).
 */
export async function presignedGetUrl(
  location: string,
  file: { contentDisposition: string; contentType: string },
  expiresInSeconds: number,
): Promise<string> {
  const { bucket, key } = parseS3Location(location);
  const [{ GetObjectCommand }, { getSignedUrl }] = await Promise.all([
    awsSdk(),
    import("@aws-sdk/s3-request-presigner"),
  ]);
  return getSignedUrl(
    await s3Client(),
    new GetObjectCommand({
      Bucket: bucket,
      Key: key,
      ResponseContentDisposition: file.contentDisposition,
      ResponseContentType: file.contentType,
    }),
    { expiresIn: expiresInSeconds },
  );
}

/** The store's refusal as an operator can act on it, naming the object. */
export function storageError(error: unknown, location: string): Error {
  if (error instanceof AppError) return error;
  const name = (error as { name?: string })?.name ?? "";
  const status = (error as S3ServiceException)?.$metadata?.httpStatusCode;
  if (name === "NoSuchKey" || name === "NotFound" || status === 404) {
    return new AppError("source_object_not_found", `No object at ${location}.`);
  }
  if (name === "NoSuchBucket") return new AppError("source_object_not_found", `No bucket for ${location}.`);
  if (
    status === 403 ||
    ["AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "CredentialsProviderError"].includes(name)
  ) {
    return new AppError(
      "source_object_denied",
      `Access to ${location} was denied (${name || `HTTP ${status}`}). Check the credentials and the bucket's policy.`,
    );
  }
  return new AppError(
    "storage_unavailable",
    `The object store did not answer for ${location}: ${(error as Error)?.message ?? name}.`,
  );
}
