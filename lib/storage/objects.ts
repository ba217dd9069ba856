import { createHash, randomUUID } from "node:crypto";
import { Transform, type Readable } from "node:stream";
import { AppError } from "../errors";

/*
 * What every storage driver shares: the object and its options, the driver interface, and the
 * streams that hash and bound an upload. The drivers (local.ts, s3.ts) build on this file, and
 * index.ts picks one of them.
 */

/** A stored object: its location (a key under STORAGE_DIR, or s3://bucket/key), size and SHA-256. */
export type StoredObject = { key: string; size: number; sha256: string };

export type PutOptions = {
  contentType?: string;
  signal?: AbortSignal;
  /**
   * The object's name under its key hint, instead of a random one: the same upload run again (a
   * publication resumed after a kill) replaces what it stored, never stores it twice.
   */
  name?: string;
};

/** An object's name under its key hint: the given one made safe for a key, or a random one. */
export const objectName = (options: PutOptions) =>
  options.name ? options.name.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_") : randomUUID();

export type StorageDriver = "local" | "s3";

/** Where new files' bytes go (STORAGE_DRIVER). Where an existing file's bytes are is its own location. */
export interface FileStorage {
  readonly driver: StorageDriver;
  /** Streams `source` into a new object, hashing it on the way; never buffers the whole file. */
  put(source: Readable, keyHint: string, options?: PutOptions): Promise<StoredObject>;
  delete(location: string): Promise<void>;
}

/** SHA-256 and size of a stream, read once. */
export async function hashStream(source: Readable): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of source) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest("hex") };
}

/** A pass-through that hashes and counts what flows through it. */
export function measuringStream(): { stream: Transform; measured: () => { size: number; sha256: string } } {
  const hash = createHash("sha256");
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, measured: () => ({ size, sha256: hash.digest("hex") }) };
}

/**
 * `work`, or an upload_interrupted error as soon as `signal` aborts: a source that blocks (a pipe
 * whose writer went quiet) must not keep an interrupted upload waiting for it.
 */
export function unlessInterrupted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  work.catch(() => {}); // settled later, after the interruption was already answered
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(uploadInterrupted());
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

export function uploadInterrupted(): AppError {
  return new AppError("upload_interrupted", "The upload was interrupted; nothing was stored.");
}
