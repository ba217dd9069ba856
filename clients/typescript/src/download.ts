import { createHash, type Hash } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { NetworkError, UnsafeResponseError, VerificationError } from "./errors.js";

/** What a download must end as. */
export type ExpectedFile = { size: number; sha256: string };

export type DownloadResult = {
  /** Bytes received over the network in this call. */
  bytesFetched: number;
  /** Bytes already on disk that the download continued from (0: from the start). */
  resumedFrom: number;
  /** A partial file was found damaged (wrong sha256 once complete) and fetched again whole. */
  restarted: boolean;
};

/**
 * A download's result with what the bytes are: their size and sha256, and what vouched for them:
 * `sha256` (the API's, or a strong ETag that is one) or `size` only (the sha256 is then computed
 * here, for the caller to record).
 */
export type CheckedDownload = DownloadResult & { size: number; sha256: string; verifiedBy: "sha256" | "size" };

/** The file a download writes to until it is verified. Kept across runs: the next one resumes it. */
export const partialPath = (dest: string) => `${dest}.part`;
/** The ETag the partial file's bytes came with, for If-Range. */
const etagPath = (dest: string) => `${dest}.part.etag`;

// Windows has no O_NOFOLLOW: there the lstat of partialSize stands alone.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

const symlinkRefused = (file: string) =>
  new UnsafeResponseError(`${path.basename(file)} is a symbolic link: nothing is written through one`);

/**
 * Opens a file the download writes or reads without following a symbolic link in its place: one
 * planted there (`x.part -> ~/.bashrc`) must not be written through, nor its target sent as If-Range.
 */
async function openNoFollow(file: string, flags: number): Promise<FileHandle> {
  try {
    return await fs.open(file, flags | NO_FOLLOW, 0o666);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") throw symlinkRefused(file);
    throw error;
  }
}

/** The size of the partial file (0: none); a symbolic link there is refused. */
async function partialSize(file: string): Promise<number> {
  const stat = await fs.lstat(file).catch(() => undefined);
  if (stat?.isSymbolicLink()) throw symlinkRefused(file);
  return stat?.size ?? 0;
}

/** The sha256 of a file's bytes so far, still open for more (a resumed download goes on from it). */
async function hashOf(file: string): Promise<Hash> {
  const hash = createHash("sha256");
  const handle = await openNoFollow(file, constants.O_RDONLY);
  for await (const chunk of handle.createReadStream({ highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash;
}

/** The ETag the partial file came with (undefined: none); a symbolic link in its place is refused. */
async function readEtag(file: string): Promise<string | undefined> {
  const handle = await openNoFollow(file, constants.O_RDONLY).catch((error: unknown) => {
    if (error instanceof UnsafeResponseError) throw error;
    return undefined;
  });
  if (!handle) return undefined;
  try {
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

async function writeEtag(file: string, etag: string): Promise<void> {
  const handle = await openNoFollow(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC);
  try {
    await handle.writeFile(etag);
  } finally {
    await handle.close();
  }
}

/**
 * Fetches a signed link into `dest`: resumes `dest.part` with Range (and If-Range on the ETag it
 * came with, so a changed file starts over), hashes as it writes, and renames to `dest` only when
 * size and sha256 match; otherwise the partial file is removed and VerificationError thrown.
 * `signedUrl` is asked for a fresh link on every attempt (links live 5 minutes). A symbolic link
 * where `dest.part` or its ETag file goes is refused (UnsafeResponseError), never written through.
 */
export async function downloadVerified(
  signedUrl: () => Promise<string>,
  dest: string,
  expected: ExpectedFile | "from-response",
  {
    fetch: fetchImpl = fetch,
    attempts = 5,
    onProgress,
  }: { fetch?: typeof fetch; attempts?: number; onProgress?: (bytes: number) => void } = {},
): Promise<CheckedDownload> {
  // Without a size and sha256 from the API (a change file), the answer gives them: the size from
  // Content-Length or Content-Range, the sha256 from a strong ETag that is one (this server's own
  // links), else the sha256 is only computed and reported.
  const learning = expected === "from-response";
  let want: { size: number | undefined; sha256: string | undefined } = learning
    ? { size: undefined, sha256: undefined }
    : { ...expected };
  await fs.mkdir(path.dirname(dest), { recursive: true });
  const part = partialPath(dest);
  let fetched = 0;
  let resumedFrom: number | undefined;
  let restarted = false;
  for (let attempt = 1; ; attempt++) {
    let have = await partialSize(part);
    if (want.size !== undefined && have > want.size) {
      await fs.rm(part, { force: true });
      have = 0;
    }
    resumedFrom ??= have;
    const etag = have > 0 ? await readEtag(etagPath(dest)) : undefined;
    // The sha256 of the partial file as it grows: its bytes on disk first, then each chunk as written.
    let running: Hash | undefined;
    try {
      if (want.size === undefined || have < want.size) {
        const headers: Record<string, string> = {};
        if (have > 0) {
          headers.range = `bytes=${have}-`;
          if (etag) headers["if-range"] = etag;
        }
        const response = await fetchImpl(await signedUrl(), { headers });
        if (response.status === 416) {
          // Nothing past what we have: the partial file is complete, or longer than the file.
          await response.body?.cancel();
          if (learning) want = { size: totalOf(response.headers.get("content-range")), sha256: want.sha256 };
          if (want.size === undefined) throw new NetworkError("the download link answered 416 without the size");
        } else if (response.status === 200 || response.status === 206) {
          const append = response.status === 206 && have > 0;
          if (!append) have = 0;
          const newEtag = response.headers.get("etag");
          if (learning) {
            const length = response.headers.get("content-length");
            want = {
              size: append ? totalOf(response.headers.get("content-range")) : length ? Number(length) : undefined,
              sha256: sha256Etag(newEtag),
            };
          }
          running = await receive(
            response,
            part,
            append,
            async () => {
              // Only worth keeping for a file large enough to be cut off midway and resumed.
              if (newEtag && (want.size ?? Infinity) > SMALL_BODY) await writeEtag(etagPath(dest), newEtag);
            },
            (bytes) => {
              fetched += bytes;
              onProgress?.(bytes);
            },
          );
        } else {
          await response.body?.cancel();
          throw new NetworkError(`the download link answered ${response.status}`);
        }
      }
      const size = await partialSize(part);
      const complete = want.size === undefined || size === want.size;
      const sha256 = complete ? (running ?? (await hashOf(part))).digest("hex") : undefined;
      if (!complete || (want.sha256 !== undefined && sha256 !== want.sha256)) {
        await Promise.all([fs.rm(part, { force: true }), fs.rm(etagPath(dest), { force: true })]);
        // A partial file from an earlier run may have been damaged: once, start over from nothing.
        if (resumedFrom > 0 && !restarted) {
          restarted = true;
          resumedFrom = 0;
          continue;
        }
        const expectedSha = want.sha256 ? ` with sha256 ${want.sha256}` : "";
        throw new VerificationError(
          `${path.basename(dest)}: got ${size} bytes${sha256 ? ` with sha256 ${sha256}` : ""}, expected ${want.size ?? "?"} bytes${expectedSha}`,
        );
      }
      await fs.rename(part, dest);
      if (etag || (want.size ?? Infinity) > SMALL_BODY) await fs.rm(etagPath(dest), { force: true });
      return {
        bytesFetched: fetched,
        resumedFrom,
        restarted,
        size,
        sha256: sha256!,
        verifiedBy: want.sha256 !== undefined ? "sha256" : "size",
      };
    } catch (error) {
      if (error instanceof VerificationError || error instanceof UnsafeResponseError || attempt >= attempts)
        throw error;
      // A broken connection: what arrived stays in the partial file, and the next attempt resumes it.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 500 * 2 ** attempt));
    }
  }
}

/**
 * Writes a 200 or 206 answer's body into the partial file (appended, or from the start), hashing
 * as it writes; answers the running hash. A small body with its length known is read whole and
 * written in one call: for thousands of small files the stream machinery costs more than the bytes.
 */
async function receive(
  response: Response,
  part: string,
  append: boolean,
  beforeWrite: () => Promise<void>,
  onBytes: (bytes: number) => void,
): Promise<Hash> {
  const hash = append ? await hashOf(part) : createHash("sha256");
  const appendOrTruncate = append ? constants.O_APPEND : constants.O_TRUNC;
  const flags = constants.O_WRONLY | constants.O_CREAT | appendOrTruncate;
  const length = Number(response.headers.get("content-length") ?? NaN);
  await beforeWrite();
  if (length <= SMALL_BODY) {
    const bytes = Buffer.from(await response.arrayBuffer());
    hash.update(bytes);
    const handle = await openNoFollow(part, flags);
    try {
      await handle.writeFile(bytes);
    } finally {
      await handle.close();
    }
    onBytes(bytes.length);
    return hash;
  }
  const out = (await openNoFollow(part, flags)).createWriteStream();
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream);
  // Counted in the same tick as the pipe is made: nothing flows before it is written.
  body.on("data", (chunk: Buffer) => {
    hash.update(chunk);
    onBytes(chunk.length);
  });
  await pipeline(body, out);
  return hash;
}

/** Bodies up to this size are read whole and written at once, and keep no ETag file for a resume. */
const SMALL_BODY = 256 * 1024;

/** The whole size from `Content-Range: bytes 0-9/1234` or `bytes *\/1234`, or undefined. */
function totalOf(contentRange: string | null): number | undefined {
  const total = /\/(\d+)\s*$/.exec(contentRange ?? "")?.[1];
  return total === undefined ? undefined : Number(total);
}

/** The sha256 a strong ETag is (this server's links answer `"<sha256 hex>"`), or undefined. */
function sha256Etag(etag: string | null): string | undefined {
  return /^"([0-9a-f]{64})"$/.exec(etag ?? "")?.[1];
}

/** Whether `file` is a file (not a symbolic link) with this size and sha256: one already synced needs no transfer. */
export async function isVerified(file: string, expected: ExpectedFile): Promise<boolean> {
  const size = await fs.lstat(file).then(
    (stat) => (stat.isFile() ? stat.size : -1),
    () => -1,
  );
  if (size !== expected.size) return false;
  return (await hashOf(file)).digest("hex") === expected.sha256;
}
