import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import path from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import ssh2, { type Client, type FileEntry, type SFTPWrapper, type Stats } from "ssh2";
import type { SftpDestinationConfig } from "../config";
import { guardedSocket } from "../network";
import {
  asStream,
  HostKeyMismatchError,
  READ_LIMIT_BYTES,
  readSmall,
  stallTimeoutMs,
  verifyingStream,
  type ExpectedObject,
  type ExportSource,
  type ExportTarget,
  type Present,
} from "./target";
import type { ListingBudget } from "./listing";

/** The SSH host key's fingerprint as `ssh-keygen -lf` prints it: SHA256: and the unpadded base64 of its SHA-256. */
export function hostKeyFingerprint(publicKey: Buffer): string {
  return `SHA256:${createHash("sha256").update(publicKey).digest("base64").replace(/=+$/, "")}`;
}

// Defined with the other targets' errors, so reading an error does not load ssh2.
export { HostKeyMismatchError } from "./target";

/**
 * A directory on an SFTP server, over ssh2 (pure JavaScript). The server's host key must match the
 * pinned fingerprint, or the connection is dropped before any credential is sent. Each file is
 * written to a temporary name beside its key and renamed into place once complete and its size
 * checked on the server, so a copy that stops half-way leaves no file under the final name; the
 * bytes are hashed as they are sent. SFTP keeps no metadata: whether a file there is the one
 * exported before is judged by its size and the run records (../run.ts).
 */
export class SftpTarget implements ExportTarget {
  readonly description: string;
  private connection?: Promise<{ client: Client; sftp: SFTPWrapper }>;
  private readonly root: string;
  /** Folders known to exist (made or found by this target): a copy into one asks the server nothing. */
  private readonly folders = new Set<string>();

  constructor(
    private readonly config: SftpDestinationConfig,
    private readonly secrets: { private_key: string } | { password: string },
  ) {
    this.description = `${config.directory} on ${config.username}@${config.host}:${config.port}`;
    this.root = path.posix.normalize(config.directory).replace(/\/$/, "") || "/";
  }

  private connect(): Promise<{ client: Client; sftp: SFTPWrapper }> {
    this.connection ??= (async () => {
      const timeoutMs = stallTimeoutMs();
      const sock = await guardedSocket(this.config.host, this.config.port, { timeoutMs: Math.min(timeoutMs, 20_000) });
      const client = new ssh2.Client();
      // Errors after the first (a server that goes on sending garbage makes one per chunk) must never go unhandled.
      client.on("error", () => {});
      let mismatch: HostKeyMismatchError | undefined;
      await new Promise<void>((resolve, reject) => {
        client.once("ready", resolve);
        client.once("error", (error) => {
          sock.destroy(); // nothing more is read from a server that failed its greeting or sign-in
          reject(mismatch ?? error);
        });
        client.connect({
          sock,
          username: this.config.username,
          ...("private_key" in this.secrets
            ? { privateKey: this.secrets.private_key }
            : { password: this.secrets.password }),
          readyTimeout: Math.min(timeoutMs, 20_000),
          hostVerifier: (key: Buffer) => {
            const seen = hostKeyFingerprint(key);
            const pinned = this.config.host_key_sha256.replace(/=$/, "");
            const same = seen.length === pinned.length && timingSafeEqual(Buffer.from(seen), Buffer.from(pinned));
            if (!same) {
              mismatch = new HostKeyMismatchError(
                `the server's host key is ${seen}, not the pinned ${pinned}: the connection was refused before signing in (if the server's key was changed on purpose, update the fingerprint)`,
              );
            }
            return same;
          },
        });
      });
      // Later errors surface on the operation that meets them.
      const sftp = await new Promise<SFTPWrapper>((resolve, reject) =>
        client.sftp((error, wrapper) => (error ? reject(error) : resolve(wrapper))),
      );
      return { client, sftp };
    })();
    this.connection.catch(() => (this.connection = undefined));
    return this.connection;
  }

  fullKey(key: string): string {
    return this.pathOf(key);
  }

  /** The server path of `key`, which stays inside the chosen directory. */
  private pathOf(key: string): string {
    const full = path.posix.join(this.root, key);
    if (!full.startsWith(this.root === "/" ? "/" : `${this.root}/`)) {
      throw new Error(`${key} is outside the chosen directory`);
    }
    return full;
  }

  private async call<T>(work: (sftp: SFTPWrapper, done: (error: Error | null | undefined, value?: T) => void) => void) {
    const { sftp } = await this.connect();
    return withTimeout(
      new Promise<T>((resolve, reject) => work(sftp, (error, value) => (error ? reject(error) : resolve(value as T)))),
      stallTimeoutMs(),
    );
  }

  async head(key: string) {
    try {
      const stats = await this.call<Stats>((sftp, done) => sftp.stat(this.pathOf(key), done));
      return stats.isFile() ? { size: stats.size, sha256: null } : null;
    } catch (error) {
      if ((error as { code?: number }).code === 2) return null; // SSH_FX_NO_SUCH_FILE
      throw error;
    }
  }

  async list(folder: string, budget: ListingBudget) {
    const listed = new Map<string, Present>();
    const where = folder ? this.pathOf(folder) : this.root;
    let handle: Buffer;
    try {
      handle = await this.call<Buffer>((sftp, done) => sftp.opendir(where, done));
    } catch (error) {
      if ((error as { code?: number }).code === 2) return listed; // no such folder yet: nothing there
      throw error;
    }
    try {
      // Batch by batch (a server sends a few hundred names each), so a huge directory is never read whole.
      for (;;) {
        budget.signal.throwIfAborted();
        const batch = await this.call<FileEntry[] | false>((sftp, done) =>
          sftp.readdir(handle, (error, list) =>
            error && (error as { code?: number }).code === 1 ? done(null, false) : done(error, list),
          ),
        );
        if (!batch || batch.length === 0) return listed;
        // Every name counts, directories and repeats too: a server may send the same names forever.
        if (!budget.page(batch.length)) return null;
        for (const entry of batch) {
          if (entry.filename === "." || entry.filename === "..") continue;
          if ((entry.attrs.mode & 0o170000) !== 0o100000) continue; // files only
          listed.set(`${folder ? `${folder}/` : ""}${entry.filename}`, { size: entry.attrs.size, sha256: null });
        }
      }
    } finally {
      await this.call<void>((sftp, done) => sftp.close(handle, done)).catch(() => {});
    }
  }

  private async makeFolders(folder: string): Promise<void> {
    if (this.folders.has(folder)) return;
    const missing: string[] = [];
    // The chosen directory itself is made too when missing; nothing above it is.
    for (let current = folder; current !== "/" && current !== "."; current = path.posix.dirname(current)) {
      const exists = await this.call<Stats>((sftp, done) => sftp.stat(current, done)).then(
        () => true,
        (error: { code?: number }) => (error.code === 2 ? false : Promise.reject(error)),
      );
      if (exists) break;
      missing.unshift(current);
    }
    for (const each of missing) {
      await this.call<void>((sftp, done) =>
        sftp.mkdir(each, (error) => (error && (error as { code?: number }).code !== 4 ? done(error) : done(null))),
      ).catch(async (error) => {
        // Made meanwhile by a copy beside this one: fine.
        const made = await this.call<Stats>((sftp, done) => sftp.stat(each, done)).catch(() => undefined);
        if (!made?.isDirectory()) throw error;
      });
    }
    this.folders.add(folder);
  }

  async put(key: string, given: ExportSource, expected: ExpectedObject, signal: AbortSignal) {
    const source = asStream(given);
    const target = this.pathOf(key);
    await this.makeFolders(path.posix.dirname(target));
    const partial = `${path.posix.dirname(target)}/.${path.posix.basename(target)}.${randomUUID().slice(0, 8)}.partial`;
    const { sftp } = await this.connect();
    const verify = verifyingStream(expected);
    const handle = await this.call<Buffer>((sftp, done) => sftp.open(partial, "w", { mode: 0o644 }, done));
    const write = parallelWriter(sftp, handle);
    try {
      await pipeline(source, verify, write, { signal });
      await this.call<void>((sftp, done) => sftp.close(handle, done));
      const stats = await this.call<Stats>((sftp, done) => sftp.stat(partial, done));
      if (stats.size !== expected.size) {
        throw new Error(`the server holds ${stats.size} bytes of ${expected.size} after the write`);
      }
      await this.rename(partial, target);
    } catch (error) {
      source.destroy();
      write.destroy();
      await this.call<void>((sftp, done) => sftp.close(handle, done)).catch(() => {});
      await this.call<void>((sftp, done) => sftp.unlink(partial, done)).catch(() => {});
      throw error;
    }
    return { verifiedBy: "the size on the server and the hash of the bytes sent" };
  }

  /** Into place, replacing what is there: OpenSSH's posix-rename where the server has it, else remove and rename. */
  private async rename(from: string, to: string): Promise<void> {
    const { sftp } = await this.connect();
    const extensions = (sftp as unknown as { _extensions?: Record<string, string> })._extensions ?? {};
    if ("posix-rename@openssh.com" in extensions) {
      await this.call<void>((sftp, done) => sftp.ext_openssh_rename(from, to, done));
      return;
    }
    await this.call<void>((sftp, done) => sftp.unlink(to, (error) => done(null, void error)));
    await this.call<void>((sftp, done) => sftp.rename(from, to, done));
  }

  async read(key: string): Promise<Buffer> {
    const { sftp } = await this.connect();
    // Read up to one byte past the limit (readFile would take whatever size the server claims).
    return withTimeout(
      readSmall(sftp.createReadStream(this.pathOf(key), { start: 0, end: READ_LIMIT_BYTES })),
      stallTimeoutMs(),
    );
  }

  async delete(key: string): Promise<void> {
    await this.call<void>((sftp, done) => sftp.unlink(this.pathOf(key), done));
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    if (connection) (await connection.catch(() => undefined))?.client.end();
  }
}

/**
 * A write stream to an open SFTP file that keeps up to `inFlight` write requests of `chunkBytes`
 * outstanding, as ssh2's own fastPut does: one request at a time (its createWriteStream) waits a
 * round trip per 32 KiB. A failed request fails the stream; it ends once every request is answered.
 */
function parallelWriter(sftp: SFTPWrapper, handle: Buffer, { inFlight = 64, chunkBytes = 32 * 1024 } = {}): Writable {
  let position = 0;
  let outstanding = 0;
  let failure: Error | undefined;
  let onAnswer: (() => void) | undefined;
  const answered = () => {
    const waiting = onAnswer;
    onAnswer = undefined;
    waiting?.();
  };
  return new Writable({
    highWaterMark: chunkBytes * 4,
    write(data: Buffer, _encoding, done) {
      let offset = 0;
      const send = () => {
        if (failure) return done(failure);
        while (offset < data.length && outstanding < inFlight) {
          const piece = data.subarray(offset, offset + chunkBytes);
          outstanding++;
          sftp.write(handle, piece, 0, piece.length, position, (error) => {
            outstanding--;
            if (error) failure ??= error;
            answered();
          });
          position += piece.length;
          offset += piece.length;
        }
        if (offset < data.length || outstanding >= inFlight) onAnswer = send;
        else done();
      };
      send();
    },
    final(done) {
      const settle = () => {
        if (outstanding === 0) return done(failure);
        onAnswer = settle;
      };
      settle();
    },
  });
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server did not answer within ${Math.round(ms / 1000)} s`)),
      ms,
    );
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}
