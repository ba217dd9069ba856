import path from "node:path";
import type { Readable } from "node:stream";
import { DATA_DIR } from "../db/config";
import { LocalDirectoryStorage } from "./local";

export type StoredObject = { key: string; size: number; sha256: string };

/** Where delivered files' bytes live. Keys are opaque to callers. */
export interface FileStorage {
  /** Streams `source` into a new object, hashing it on the way; never buffers the whole file. */
  put(source: Readable, keyHint: string): Promise<StoredObject>;
  /** A stream of bytes `start`..`end` (inclusive) of the object, or the whole object. */
  read(key: string, range?: { start: number; end: number }): Readable;
  size(key: string): Promise<number>;
  delete(key: string): Promise<void>;
}

let storage: FileStorage | undefined;

/** The configured storage: a local directory (`STORAGE_DIR`, default `.data/files`). */
export function fileStorage(): FileStorage {
  storage ??= new LocalDirectoryStorage(
    path.resolve(/* turbopackIgnore: true */ process.env.STORAGE_DIR ?? path.join(DATA_DIR, "files")),
  );
  return storage;
}
