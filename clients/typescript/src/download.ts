import { createHash, type Hash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { NetworkError, VerificationError } from "./errors.js";

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

/** The file a download writes to until it is verified. Kept across runs: the next one resumes it. */
export const partialPath = (dest: string) => `${dest}.part`;
/** The ETag the partial file's bytes came with, for If-Range. */
const etagPath = (dest: string) => `${dest}.part.etag`;

async function fileSize(file: string): Promise<number> {
  return fs.stat(file).then(
    (stat) => stat.size,
    () => 0,
  );
}

/** The sha256 of a file's bytes so far, still open for more (a resumed download goes on from it). */
async function hashOf(file: string): Promise<Hash> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash;
}

/**
 * Fetches a signed link into `dest`: resumes `dest.part` with Range (and If-Range on the ETag it
 * came with, so a changed file starts over), hashes as it writes, and renames to `dest` only when
 * size and sha256 match; otherwise the partial file is removed and VerificationError thrown.
 * `signedUrl` is asked for a fresh link on every attempt (links live 5 minutes).
 */
export async function downloadVerified(
  signedUrl: () => Promise<string>,
  dest: string,
  expected: ExpectedFile,
  {
    fetch: fetchImpl = fetch,
    attempts = 5,
    onProgress,
  }: { fetch?: typeof fetch; attempts?: number; onProgress?: (bytes: number) => void } = {},
): Promise<DownloadResult> {
  await fs.mkdir(path.dirname(dest), { recursive: true });
  const part = partialPath(dest);
  let fetched = 0;
  let resumedFrom: number | undefined;
  let restarted = false;
  for (let attempt = 1; ; attempt++) {
    let have = await fileSize(part);
    if (have > expected.size) {
      await fs.rm(part, { force: true });
      have = 0;
    }
    resumedFrom ??= have;
    const etag = have > 0 ? await fs.readFile(etagPath(dest), "utf8").catch(() => undefined) : undefined;
    // The sha256 of the partial file as it grows: its bytes on disk first, then each chunk as written.
    let running: Hash | undefined;
    try {
      if (have < expected.size) {
        const headers: Record<string, string> = {};
        if (have > 0) {
          headers.range = `bytes=${have}-`;
          if (etag) headers["if-range"] = etag;
        }
        const response = await fetchImpl(await signedUrl(), { headers });
        if (response.status === 416) {
          // Nothing past what we have: the partial file is complete, or longer than the file.
          await response.body?.cancel();
        } else if (response.status === 200 || response.status === 206) {
          const append = response.status === 206 && have > 0;
          if (!append) have = 0;
          const newEtag = response.headers.get("etag");
          if (newEtag) await fs.writeFile(etagPath(dest), newEtag);
          const hash = append ? await hashOf(part) : createHash("sha256");
          const out = (await fs.open(part, append ? "a" : "w")).createWriteStream();
          const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream);
          // Counted in the same tick as the pipe is made: nothing flows before it is written.
          body.on("data", (chunk: Buffer) => {
            hash.update(chunk);
            fetched += chunk.length;
            onProgress?.(chunk.length);
          });
          await pipeline(body, out);
          running = hash;
        } else {
          await response.body?.cancel();
          throw new NetworkError(`the download link answered ${response.status}`);
        }
      }
      const size = await fileSize(part);
      const sha256 = size === expected.size ? (running ?? (await hashOf(part))).digest("hex") : undefined;
      if (size !== expected.size || sha256 !== expected.sha256) {
        await Promise.all([fs.rm(part, { force: true }), fs.rm(etagPath(dest), { force: true })]);
        // A partial file from an earlier run may have been damaged: once, start over from nothing.
        if (resumedFrom > 0 && !restarted) {
          restarted = true;
          resumedFrom = 0;
          continue;
        }
        throw new VerificationError(
          `${path.basename(dest)}: got ${size} bytes${sha256 ? ` with sha256 ${sha256}` : ""}, expected ${expected.size} bytes with sha256 ${expected.sha256}`,
        );
      }
      await fs.rename(part, dest);
      await fs.rm(etagPath(dest), { force: true });
      return { bytesFetched: fetched, resumedFrom, restarted };
    } catch (error) {
      if (error instanceof VerificationError || attempt >= attempts) throw error;
      // A broken connection: what arrived stays in the partial file, and the next attempt resumes it.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 500 * 2 ** attempt));
    }
  }
}

/** Whether `file` exists with this size and sha256 (a file already synced needs no transfer). */
export async function isVerified(file: string, expected: ExpectedFile): Promise<boolean> {
  const size = await fs.stat(file).then(
    (stat) => (stat.isFile() ? stat.size : -1),
    () => -1,
  );
  if (size !== expected.size) return false;
  return (await hashOf(file)).digest("hex") === expected.sha256;
}
