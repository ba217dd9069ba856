import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { createWriteStream, promises as fs } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { sqlQuery } from "../db/client";
import { privateTempRoot, sizeSetting } from "../engine/engine";
import { logger } from "../log";
import { processSingleton } from "../singleton";
import { readS3Object } from "../storage/s3";

/**
 * The query engine's local copies of objects in S3 (DuckDB's httpfs is not available here): each is
 * copied once into `query-cache` under the engine's temporary root, named by what it holds (a file's
 * id, with `-parquet` for its Parquet rendition) and a hash of its location. The cache holds at most `DATASET_QUERY_CACHE_MAX`
 * (default 5GB): after each new copy and after each query, the least recently used copies are removed
 * until it fits, and so is every copy whose file no longer belongs to a kept version of a delivered
 * order (a pruned version, a refunded order). A copy handed to a query is pinned until the query
 * ends (withCachedCopies), so it is never removed under a running query; pinned copies may hold the
 * cache over its bound until their queries end.
 */

const CACHE_FOLDER = "query-cache";
const ENTRY = /^(fil_[0-9a-f]{32}(?:-parquet)?)\.([0-9a-f]{16})\.parquet$/;

/** What a copy holds: an order file, or (rendition) its Parquet rendition. */
export type CachedSource = { fileId: string; rendition: boolean };
const sourceName = (source: CachedSource) => `${source.fileId}${source.rendition ? "-parquet" : ""}`;

/** The cache's bound (`DATASET_QUERY_CACHE_MAX`, a size such as 5GB). */
function cacheMaxBytes(): number {
  return sizeSetting("DATASET_QUERY_CACHE_MAX", process.env.DATASET_QUERY_CACHE_MAX || "5GB");
}

/**
 * How many running queries of this process read each copy, and the last of the turns in which copies
 * are taken and removed one after the other (a copy is never removed between its check and its pin).
 * One per process, shared by the launcher's copy of this module and Next.js's (lib/singleton.ts).
 */
const cache = processSingleton("explore:query-cache", () => ({
  pins: new Map<string, number>(),
  lastTurn: Promise.resolve() as Promise<unknown>,
}));
const pins = cache.pins;
/** The copies handed out within one query (withCachedCopies). */
const queryCopies = new AsyncLocalStorage<Set<string>>();
function inTurn<T>(work: () => Promise<T>): Promise<T> {
  const turn = cache.lastTurn.then(work);
  cache.lastTurn = turn.catch(() => undefined);
  return turn;
}

const locationHash = (location: string) => createHash("sha256").update(location).digest("hex").slice(0, 16);

async function cacheFolder(): Promise<string> {
  const folder = path.join(await privateTempRoot(), CACHE_FOLDER);
  await fs.mkdir(folder, { recursive: true, mode: 0o700 });
  return folder;
}

/**
 * Runs a query's work (its files looked up, then the engine) with every copy it is handed pinned;
 * afterwards the cache is brought back within its bound.
 */
export async function withCachedCopies<T>(work: () => Promise<T>): Promise<T> {
  const copies = new Set<string>();
  try {
    return await queryCopies.run(copies, work);
  } finally {
    for (const copy of copies) {
      const left = (pins.get(copy) ?? 1) - 1;
      if (left > 0) pins.set(copy, left);
      else pins.delete(copy);
    }
    if (copies.size > 0) await trimQueryCache();
  }
}

/** A local copy of the S3 object at `location`, which holds `source`, pinned for the current query. */
export async function cachedCopy(source: CachedSource, location: string): Promise<string> {
  const copy = path.join(await cacheFolder(), `${sourceName(source)}.${locationHash(location)}.parquet`);
  // A copy's modification time is its last use: the least recently used go first.
  const found = await inTurn(async () => {
    const now = new Date();
    const touched = await fs.utimes(copy, now, now).then(
      () => true,
      () => false,
    );
    if (touched) pin(copy);
    return touched;
  });
  if (found) return copy;
  // Written under a name of its own, then renamed: a query never reads half a copy.
  const partial = `${copy}.${process.pid}.${Date.now()}.part`;
  try {
    const { body } = await readS3Object(location);
    await pipeline(body, createWriteStream(partial, { mode: 0o600 }));
    await inTurn(async () => {
      await fs.rename(partial, copy);
      pin(copy);
    });
  } finally {
    await fs.rm(partial, { force: true });
  }
  await trimQueryCache();
  return copy;
}

function pin(copy: string): void {
  const copies = queryCopies.getStore();
  if (!copies || copies.has(copy)) return;
  copies.add(copy);
  pins.set(copy, (pins.get(copy) ?? 0) + 1);
}

type Entry = { file: string; source: string; hash: string; size: number; usedAt: number };

/** Removes the copies of files no longer read, then the least recently used until the cache fits its bound. */
async function trimQueryCache(): Promise<void> {
  try {
    const folder = await cacheFolder();
    const entries: Entry[] = [];
    for (const name of await fs.readdir(folder)) {
      const [, source, hash] = ENTRY.exec(name) ?? [];
      const file = path.join(folder, name);
      const stat = source && hash ? await fs.stat(file).catch(() => undefined) : undefined;
      if (source && hash && stat) entries.push({ file, source, hash, size: stat.size, usedAt: stat.mtimeMs });
    }
    const live = await liveLocations(entries.map((entry) => entry.source.replace(/-parquet$/, "")));
    const kept = (entry: Entry) => live.has(entry.source) && locationHash(live.get(entry.source)!) === entry.hash;
    const max = cacheMaxBytes();
    await inTurn(async () => {
      let total = entries.reduce((sum, entry) => sum + entry.size, 0);
      const leastRecentFirst = [
        ...entries.filter((entry) => !kept(entry)),
        ...entries.filter(kept).sort((a, b) => a.usedAt - b.usedAt),
      ];
      for (const entry of leastRecentFirst) {
        if (kept(entry) && total <= max) break;
        if (pins.has(entry.file)) continue;
        await fs.rm(entry.file, { force: true });
        total -= entry.size;
      }
    });
  } catch (error) {
    // A cache left over its bound until the next query is better than a query failed for it.
    logger().warn({ err: error }, "The query cache could not be trimmed.");
  }
}

/** By source name, the locations of the Parquet renditions and change files of `fileIds` a query may still read. */
async function liveLocations(fileIds: string[]): Promise<Map<string, string>> {
  if (fileIds.length === 0) return new Map();
  const rows = await sqlQuery<{ source: string; location: string }>(
    `SELECT r.file_id || '-parquet' AS source, r.storage_key AS location
     FROM file_renditions r JOIN order_files f ON f.id = r.file_id JOIN orders o ON o.id = f.order_id
     WHERE r.file_id = ANY($1) AND r.format = 'parquet' AND r.status = 'ready' AND o.status = 'delivered'
       AND EXISTS (SELECT 1 FROM table_versions v WHERE v.publication_id = f.publication_id AND v.pruned_at IS NULL)
     UNION ALL
     SELECT f.id, f.storage_key FROM order_files f JOIN orders o ON o.id = f.order_id
     WHERE f.id = ANY($1) AND o.status = 'delivered'
       AND EXISTS (SELECT 1 FROM table_versions v WHERE v.change_file_id = f.id AND v.pruned_at IS NULL)`,
    [[...new Set(fileIds)]],
  );
  return new Map(rows.map((row) => [row.source, row.location]));
}
