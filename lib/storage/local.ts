import { createHash, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { FileStorage, StoredObject } from "./index";

/**
 * Objects are files under one directory. A write goes to a temporary file that is renamed into
 * place only once complete, so a failed or interrupted upload never leaves a partial object.
 * Directories are created 0700 and files 0600: readable by the app's user only.
 */
export class LocalDirectoryStorage implements FileStorage {
  constructor(private readonly root: string) {}

  async put(source: Readable, keyHint: string): Promise<StoredObject> {
    const key = `${sanitise(keyHint)}/${randomUUID()}`;
    const target = this.pathOf(key);
    const partial = `${target}.partial`;
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const hash = createHash("sha256");
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, measure, createWriteStream(partial, { flags: "wx", mode: 0o600 }));
      await fs.rename(partial, target);
    } catch (error) {
      await fs.rm(partial, { force: true });
      throw error;
    }
    return { key, size, sha256: hash.digest("hex") };
  }

  read(key: string, range?: { start: number; end: number }): Readable {
    return createReadStream(this.pathOf(key), range);
  }

  async size(key: string): Promise<number> {
    return (await fs.stat(this.pathOf(key))).size;
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.pathOf(key), { force: true });
  }

  private pathOf(key: string): string {
    const resolved = path.resolve(this.root, key);
    if (!resolved.startsWith(this.root + path.sep)) throw new Error("Storage key escapes the storage directory.");
    return resolved;
  }
}

function sanitise(segment: string): string {
  return segment.replace(/[^A-Za-z0-9_-]/g, "_") || "object";
}
