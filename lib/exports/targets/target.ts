import { createHash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import { addAbortSignal, Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ListingBudget } from "./listing";

/**
 * A buyer's store as exports see it: an S3 bucket, an Azure container or an SFTP directory, under
 * the destination's prefix. Keys are relative to that prefix and already checked (./../template.ts).
 * A `put` never leaves a half-written object under its key: each store's own way (an S3 multipart
 * upload or an Azure block list committed at the end, an SFTP file renamed into place) makes the
 * object appear whole or not at all.
 */
export interface ExportTarget {
  /** The store and place in a few words, for messages ("s3://bucket/prefix at https://host"). */
  readonly description: string;
  /** Where `key` is in the store: under the prefix (S3, Azure) or the directory (SFTP). */
  fullKey(key: string): string;
  /** What is at `key` now: its size and the sha256 kept in its metadata (null where the store keeps none), or null. */
  head(key: string, signal?: AbortSignal): Promise<{ size: number; sha256: string | null } | null>;
  /**
   * What is in `folder` (a key's folder, "" for the top), one level deep, in one listing instead of
   * a `head` per key: each object's key and size, and its sha256 where the listing gives metadata
   * (undefined where it does not: S3's; null where the store keeps none: SFTP). Null when the store
   * sends more pages or entries than `budget` allows (./listing.ts): the listing stops there and each
   * key is asked on its own. Every request of it is aborted by `budget.signal`.
   */
  list(folder: string, budget: ListingBudget): Promise<Map<string, Present> | null>;
  /**
   * Copies `source` to `key` with the sha256 in its metadata; the bytes are checked against
   * `expected` as they go (a source that changed fails before the object appears) and then as
   * the store saw them. A file of at most WHOLE_FILE_BYTES may come as its bytes, read whole: they
   * are checked before any is sent and go in one request. Returns how they were checked, in a few words.
   */
  put(
    key: string,
    source: ExportSource,
    expected: ExpectedObject,
    signal: AbortSignal,
  ): Promise<{ verifiedBy: string }>;
  /** A small object's bytes (the connection test's read-back), at most READ_LIMIT_BYTES of them. */
  read(key: string): Promise<Buffer>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

/** An object found by a listing: sha256 undefined when the listing does not say (ask `head`), null when the store keeps none. */
export type Present = { size: number; sha256?: string | null };

export type ExpectedObject = { size: number; sha256: string; contentType: string };

/** A write or read that made no progress for this long is given up (a store that stalls must not hold a worker). */
export function stallTimeoutMs(): number {
  const configured = Number(process.env.EXPORT_STALL_TIMEOUT_MS);
  return Number.isFinite(configured) && configured > 0 ? configured : 60_000;
}

/** Thrown when an SFTP server's host key is not the pinned one: nothing was sent to it. */
export class HostKeyMismatchError extends Error {}

/** A stored file whose bytes are not what its record says: it is not copied (nor anything made of it). */
export class SourceChangedError extends Error {}

/** Why a source's bytes are not the file its record describes. */
function changedSource(size: number, sha256: string, expected: ExpectedObject): SourceChangedError {
  return new SourceChangedError(
    `the stored file is not what its record says (${size} bytes, sha256 ${sha256}; expected ${expected.size} bytes, sha256 ${expected.sha256})`,
  );
}

/**
 * A pass-through that hashes what flows (sha256) and fails at the end, before passing the end on,
 * when the size or sha256 differ from `expected`: the store then never completes the object.
 */
export function verifyingStream(expected: ExpectedObject): Transform {
  const sha256 = createHash("sha256");
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sha256.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      const digest = sha256.digest("hex");
      if (size !== expected.size || digest !== expected.sha256) return done(changedSource(size, digest, expected));
      done();
    },
  });
}

/**
 * A stored file on this machine's disk: a target reads it part by part straight into its own
 * buffers. `onRead` is called after each read (the copy's progress, for its stall timer).
 */
export class LocalFile {
  constructor(
    readonly path: string,
    readonly onRead: () => void = () => {},
  ) {}
}

/** What a target copies: a stream, a small file's bytes read whole, or a local file. */
export type ExportSource = Readable | Buffer | LocalFile;

/** `source` as a stream (for a store written as one: SFTP). */
export function asStream(source: ExportSource): Readable {
  if (Buffer.isBuffer(source)) return Readable.from([source]);
  if (!(source instanceof LocalFile)) return source;
  const { path, onRead } = source;
  return createReadStream(path, { highWaterMark: 1024 * 1024 }).pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        onRead();
        done(null, chunk);
      },
    }),
  );
}

/**
 * Files up to this size are read whole and sent in one request (an S3 PutObject, an Azure Put Blob):
 * the export reads them as one buffer, and a store's part or block is this size too.
 */
export const WHOLE_FILE_BYTES = 8 * 1024 * 1024;

/**
 * A small file's bytes, from a stream or read whole already, checked against `expected` (size and
 * sha256: a source that changed is refused before a byte is sent), with their MD5 where the store
 * checks one. A stream is read whole first (at most WHOLE_FILE_BYTES, its size said by `expected`).
 */
export async function wholeVerified(
  source: ExportSource,
  expected: ExpectedObject,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; md5: Buffer }> {
  let bytes: Buffer;
  if (Buffer.isBuffer(source)) {
    bytes = source;
  } else if (source instanceof LocalFile) {
    bytes = await fs.readFile(source.path, { signal });
  } else {
    const chunks: Buffer[] = [];
    await pipeline(
      source,
      async (flowing: AsyncIterable<Buffer>) => {
        for await (const chunk of flowing) chunks.push(chunk);
      },
      { signal },
    );
    bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  if (bytes.length !== expected.size || sha256 !== expected.sha256) throw changedSource(bytes.length, sha256, expected);
  return { bytes, md5: createHash("md5").update(bytes).digest() };
}

/**
 * Sends a file in parts of `partSize` bytes (the last one shorter; one empty part for an empty
 * file) through `send`, at most `inFlight` at once while the next one is read. The parts live in at
 * most `inFlight + 1` buffers allocated once and reused, so a file of any size holds that much and
 * makes no garbage of its parts: a local file is read straight into them, a stream's chunks are
 * copied in. Each part is hashed before it is sent (its MD5 goes to `send`, for the store's check of
 * the part) and the whole's sha256 runs along; once every part is sent the whole is checked against
 * `expected`, so a source that changed throws SourceChangedError before the caller completes the
 * object (also as soon as it passes the expected size). A failed send stops the reading; what is in
 * flight settles before the first failure is thrown. `wholeMd5`: the MD5 of all the bytes too.
 */
export async function sendInParts(
  source: Readable | LocalFile,
  expected: ExpectedObject,
  options: { partSize: number; inFlight: number; wholeMd5?: boolean; signal: AbortSignal },
  send: (part: Buffer, index: number, md5: Buffer) => Promise<void>,
): Promise<{ partMd5s: Buffer[]; md5?: string }> {
  const { partSize, inFlight, signal } = options;
  const reader = source instanceof LocalFile ? await fileParts(source) : streamParts(source, signal);
  const sha256 = createHash("sha256");
  const whole = options.wholeMd5 ? createHash("md5") : undefined;
  const partMd5s: Buffer[] = [];
  const free: Buffer[] = [];
  const sending = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  let size = 0;
  const waitForRoom = async () => {
    while (sending.size >= inFlight && !failure) await Promise.race(sending);
    if (failure) throw failure.error;
  };
  try {
    for (let index = 0; ; index++) {
      signal.throwIfAborted();
      await waitForRoom();
      const buffer = free.pop() ?? Buffer.allocUnsafeSlow(partSize);
      const length = await reader.fill(buffer);
      if (length === 0 && index > 0) break;
      const part = buffer.subarray(0, length);
      size += length;
      if (size > expected.size) {
        throw new SourceChangedError(
          `the stored file is longer than its record says (more than ${expected.size} bytes)`,
        );
      }
      sha256.update(part);
      whole?.update(part);
      const md5 = createHash("md5").update(part).digest();
      partMd5s[index] = md5;
      const work = send(part, index, md5).then(
        () => {
          sending.delete(work);
          free.push(buffer);
        },
        (error: unknown) => {
          sending.delete(work);
          failure ??= { error };
        },
      );
      sending.add(work);
      if (length < partSize) break;
    }
    await Promise.all(sending);
    if (failure) throw failure.error;
  } catch (error) {
    await Promise.all(sending);
    throw failure ? failure.error : error;
  } finally {
    await reader.close();
  }
  const digest = sha256.digest("hex");
  if (size !== expected.size || digest !== expected.sha256) throw changedSource(size, digest, expected);
  return { partMd5s, md5: whole?.digest("hex") };
}

/** Fills a buffer with a source's next bytes (up to its length; fewer only at the end, 0 past it). */
type PartReader = { fill(buffer: Buffer): Promise<number>; close(): Promise<void> };

/** A local file read in order, each part straight into its buffer. */
async function fileParts(file: LocalFile): Promise<PartReader> {
  const handle = await fs.open(file.path, "r");
  let position = 0;
  return {
    async fill(buffer) {
      let filled = 0;
      while (filled < buffer.length) {
        const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, position);
        if (bytesRead === 0) break;
        filled += bytesRead;
        position += bytesRead;
        file.onRead();
      }
      return filled;
    },
    close: () => handle.close(),
  };
}

/** A stream's chunks copied into the buffers; the stream is destroyed on abort (a stalled store source included). */
function streamParts(source: Readable, signal: AbortSignal): PartReader {
  const chunks = addAbortSignal(signal, source)[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let rest: Buffer | undefined;
  let ended = false;
  return {
    async fill(buffer) {
      let filled = 0;
      while (filled < buffer.length) {
        if (!rest || rest.length === 0) {
          if (ended) break;
          const next = await chunks.next();
          if (next.done) {
            ended = true;
            break;
          }
          rest = next.value;
        }
        const copied = rest.copy(buffer, filled);
        filled += copied;
        rest = rest.subarray(copied);
      }
      return filled;
    },
    async close() {
      if (!ended) source.destroy();
    },
  };
}

/** What `read` takes of an object: the connection test's is a few dozen bytes, a store may claim gigabytes. */
export const READ_LIMIT_BYTES = 64 * 1024;

/** A small object's bytes from `body`, refused once they pass READ_LIMIT_BYTES (the rest is not read). */
export async function readSmall(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > READ_LIMIT_BYTES) {
      (body as { destroy?: () => void }).destroy?.();
      throw new Error(`the store answered more than ${READ_LIMIT_BYTES / 1024} KiB for a small object`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** A small object used by the connection test: its name says what it is, should a failed test leave it. */
export const TEST_OBJECT_NAME = "_dataset-access-connection-test";
