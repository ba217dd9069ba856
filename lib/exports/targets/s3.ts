import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandInput,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from "@aws-sdk/client-s3";
import type { S3DestinationConfig } from "../config";
import { guardedAgents } from "../network";
import { withPrefix } from "../template";
import {
  sendInParts,
  stallTimeoutMs,
  type ExpectedObject,
  type ExportSource,
  type ExportTarget,
  type Present,
  readSmall,
  WHOLE_FILE_BYTES,
  wholeVerified,
} from "./target";
import type { ListingBudget } from "./listing";

/**
 * Multipart parts of 8 MiB, four in flight and one being read: five buffers of 8 MiB, allocated once
 * per copy and reused (./target.ts sendInParts), whatever the file's size.
 */
export const S3_PART_SIZE = WHOLE_FILE_BYTES;
const PARTS_IN_FLIGHT = 4;

/**
 * An S3-compatible bucket (AWS, R2, MinIO, GCS's XML API with HMAC keys, Ceph). Every connection
 * goes through the export address filter (an endpoint override included); redirects are not
 * followed by the SDK. Objects are written with a multipart upload (a single PUT when small), which
 * makes them visible only once complete, and aborted on any failure. The store's own check is used
 * where it gives one (its SHA-256 checksum, or an ETag that is the MD5 of the bytes or of the parts);
 * otherwise the object is read back and hashed.
 */
export class S3Target implements ExportTarget {
  readonly description: string;
  private readonly client: S3Client;

  constructor(
    private readonly config: S3DestinationConfig,
    secrets: { secret_access_key: string },
  ) {
    this.description = `s3://${config.bucket}/${config.prefix ?? ""}${config.endpoint ? ` at ${config.endpoint}` : ""}`;
    const { httpAgent, httpsAgent } = guardedAgents();
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint || undefined,
      forcePathStyle: config.force_path_style ?? false,
      credentials: { accessKeyId: config.access_key_id, secretAccessKey: secrets.secret_access_key },
      // Checksums only where the API requires one: many S3-compatible stores refuse the SDK's default trailers.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: {
        httpAgent,
        httpsAgent,
        connectionTimeout: 15_000,
        requestTimeout: stallTimeoutMs(),
        throwOnRequestTimeout: true,
      },
      maxAttempts: 2,
    });
  }

  fullKey(key: string): string {
    return withPrefix(this.config.prefix ?? "", key);
  }

  private key(key: string): string {
    return this.fullKey(key);
  }

  async head(key: string, signal?: AbortSignal) {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }), {
        abortSignal: signal,
      });
      return { size: Number(head.ContentLength ?? 0), sha256: head.Metadata?.sha256 ?? null };
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404 || (error as Error).name === "NotFound") return null;
      throw error;
    }
  }

  async list(folder: string, budget: ListingBudget) {
    const listed = new Map<string, Present>();
    const prefix = folder ? `${this.key(folder)}/` : this.key("");
    let token: string | undefined;
    do {
      const command = listingCommand({
        Bucket: this.config.bucket,
        Prefix: prefix,
        Delimiter: "/",
        MaxKeys: 1000,
        ContinuationToken: token,
      });
      const page = await this.client.send(command, { abortSignal: budget.signal });
      for (const object of page.Contents ?? []) {
        if (!object.Key?.startsWith(prefix)) continue;
        listed.set(`${folder ? `${folder}/` : ""}${object.Key.slice(prefix.length)}`, {
          size: Number(object.Size ?? 0),
        });
      }
      // Every key and folder sent counts, new or not: a store may send the same page, or empty ones, forever.
      if (!budget.page((page.Contents?.length ?? 0) + (page.CommonPrefixes?.length ?? 0))) return null;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return listed;
  }

  async put(key: string, source: ExportSource, expected: ExpectedObject, signal: AbortSignal) {
    if (Buffer.isBuffer(source) || expected.size <= S3_PART_SIZE) return this.putWhole(key, source, expected, signal);
    const object = { Bucket: this.config.bucket, Key: this.key(key) };
    const { UploadId } = await this.client.send(
      new CreateMultipartUploadCommand({
        ...object,
        ContentType: expected.contentType,
        Metadata: { sha256: expected.sha256 },
      }),
      { abortSignal: signal },
    );
    const parts: CompletedPart[] = [];
    let sent: { partMd5s: Buffer[]; md5?: string };
    let answer: { ETag?: string };
    try {
      // The MD5 of each part (sent as its Content-MD5, and AWS's multipart ETag) and of the whole (other stores' ETag).
      sent = await sendInParts(
        source,
        expected,
        { partSize: S3_PART_SIZE, inFlight: PARTS_IN_FLIGHT, wholeMd5: true, signal },
        async (part, index, md5) => {
          const uploaded = await this.client.send(
            new UploadPartCommand({
              ...object,
              UploadId,
              PartNumber: index + 1,
              Body: part,
              ContentLength: part.length,
              // The store refuses the part if its bytes differ from what was hashed here.
              ContentMD5: md5.toString("base64"),
            }),
            { abortSignal: signal },
          );
          parts[index] = { PartNumber: index + 1, ETag: uploaded.ETag };
        },
      );
      // Every part sent and the whole checked against the record: only now does the object appear.
      answer = await this.client.send(
        new CompleteMultipartUploadCommand({ ...object, UploadId, MultipartUpload: { Parts: parts } }),
        { abortSignal: signal },
      );
    } catch (error) {
      if (source instanceof Readable) source.destroy();
      await this.client
        .send(new AbortMultipartUploadCommand({ ...object, UploadId }), { abortSignal: AbortSignal.timeout(10_000) })
        .catch(() => {});
      throw error;
    }
    const etag = answer.ETag?.replace(/"/g, "").toLowerCase();
    const partsEtag = `${createHash("md5").update(Buffer.concat(sent.partMd5s)).digest("hex")}-${sent.partMd5s.length}`;
    if (etag && (etag === sent.md5 || etag === partsEtag)) return { verifiedBy: "the store's MD5 ETag" };
    // No checksum from the store that says what it holds (an encrypted bucket's ETag is not an MD5): read it back.
    return this.checkByReading(key, expected, signal);
  }

  /**
   * A file of one part or less, read whole (at most a part's size) and checked before it is sent:
   * one PutObject whose Content-MD5 the store checks, so a damaged upload is refused, never stored.
   */
  private async putWhole(key: string, source: ExportSource, expected: ExpectedObject, signal: AbortSignal) {
    const { bytes, md5 } = await wholeVerified(source, expected, signal);
    const answer = await this.client.send(
      new PutObjectCommand({
        Bucket: this.config.bucket,
        Key: this.key(key),
        Body: bytes,
        ContentType: expected.contentType,
        ContentMD5: md5.toString("base64"),
        Metadata: { sha256: expected.sha256 },
      }),
      { abortSignal: signal },
    );
    if (answer.ETag?.replace(/"/g, "").toLowerCase() === md5.toString("hex"))
      return { verifiedBy: "the store's MD5 check" };
    return this.checkByReading(key, expected, signal);
  }

  /** The object read back and hashed, for a store whose answer says nothing checkable; deleted when wrong. */
  private async checkByReading(key: string, expected: ExpectedObject, signal: AbortSignal) {
    const landed = await this.hashOf(key, signal, expected.size);
    if (landed.size !== expected.size || landed.sha256 !== expected.sha256) {
      await this.delete(key).catch(() => {});
      throw new Error(
        `the object read back is ${landed.size} bytes with sha256 ${landed.sha256}, not what was sent; it was deleted`,
      );
    }
    return { verifiedBy: "reading the object back" };
  }

  private async hashOf(key: string, signal: AbortSignal, atMost: number): Promise<{ size: number; sha256: string }> {
    const object = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }), {
      abortSignal: signal,
    });
    const hash = createHash("sha256");
    let size = 0;
    const body = object.Body as Readable;
    for await (const chunk of body) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
      // More than was sent is wrong already: a store streaming on without end is not read on.
      if (size > atMost) {
        body.destroy();
        break;
      }
    }
    return { size, sha256: hash.digest("hex") };
  }

  async read(key: string): Promise<Buffer> {
    const object = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }));
    return readSmall(object.Body as Readable);
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/**
 * A listing whose path-style path is `/bucket`, not the SDK's `/bucket/`: both are the bucket to
 * AWS, but some S3-compatible stores (s3rver among them) sign `/bucket` whatever was sent and refuse
 * the SDK's signature. The path is set before the request is signed.
 */
function listingCommand(input: ListObjectsV2CommandInput): ListObjectsV2Command {
  const command = new ListObjectsV2Command(input);
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { path?: string };
      if (typeof request.path === "string" && /^\/[^/]+\/$/.test(request.path)) {
        request.path = request.path.slice(0, -1);
      }
      return next(args);
    },
    { step: "build", name: "exportsBucketPathWithoutSlash" },
  );
  return command;
}
