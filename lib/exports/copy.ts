import { Readable, Transform } from "node:stream";
import { db, sqlQuery } from "../db/client";
import { openSource, type ExportFile } from "./files";
import { MANIFEST_NAME, type PlannedFile } from "./manifest";
import type { Leased } from "./outcomes";
import { renderKey, type KeyValues } from "./template";
import type { ExportTarget, Present } from "./targets";
import { stallTimeoutMs } from "./targets/target";
import { listOrGiveUp } from "./targets/bounded-listing";
import { LISTING_WITHIN_MS } from "./targets/listing";
import type { HeldLease } from "./lease";

/**
 * A run's copying: each file's key, what the store holds already, and the files streamed into it
 * in lanes by size.
 */

/**
 * How many files are copied at once, by size: tiny ones 16 at a time, ones of up to a part (read whole
 * into memory) 8, larger ones alone (each has its own parts or blocks in flight). At most about 64 MB
 * of file bytes are held at once.
 */
const LANES = [
  { upTo: 1024 * 1024, lanes: 16 },
  { upTo: 8 * 1024 * 1024, lanes: 8 },
  { upTo: Number.MAX_SAFE_INTEGER, lanes: 1 },
];

/** Each file's key under the template; a rendition whose name meets another file's gets its original name before its format. */
export function planKeys(
  files: ExportFile[],
  template: string,
  run: Omit<KeyValues, "file_name" | "file_id">,
): PlannedFile[] {
  const values = (file: ExportFile, name: string): KeyValues => ({
    order_id: run.order_id,
    order_name: run.order_name,
    file_name: name,
    file_id: file.fileId,
    date: run.date,
    ...(file.table ? { table: file.table.name, version: file.table.version } : {}),
  });
  const taken = new Set<string>();
  return files.map((file) => {
    let key = renderKey(template, values(file, file.name));
    // The manifest takes that name in the run's folder: a delivered file of that name goes beside it, under its id.
    if (key.split("/").pop() === MANIFEST_NAME)
      key = renderKey(template, values(file, `_manifest.${file.fileId}.json`));
    if (taken.has(key) && file.format !== "original") {
      key = renderKey(template, values(file, `${file.name.replace(/\.[^.]+$/, "")}.${file.fileId}.${file.format}`));
    }
    if (taken.has(key))
      throw new Error(`two files of the order would be written to ${key}: use {file_id} in the key template`);
    taken.add(key);
    return { ...file, key };
  });
}

export type Copied = { key: string; skipped: boolean; verifiedBy: string };

/**
 * A folder holding at least this many of a run's files is listed (a page per 1,000 objects) instead
 * of asked about key by key; a listing past its bounds (./targets/listing.ts: a folder shared with
 * much else, or a store that lists forever) is given up for the per-key checks.
 */
const LIST_FROM_FILES = 8;

/** Copies the planned files (small ones several at once), skipping any already there with the same sha256. */
export async function copyAll(
  run: Leased,
  target: ExportTarget,
  planned: PlannedFile[],
  destinationId: string,
  lease: HeldLease,
): Promise<Copied[]> {
  const leaseLost = lease.signal;
  const results = new Map<string, Copied>();
  let done = 0;
  let bytes = 0;
  let lastReport = Date.now();
  const report = async (force = false) => {
    if (!force && Date.now() - lastReport < 2000) return;
    lastReport = Date.now();
    await db()
      .exportRun.updateMany({
        where: { id: run.id, leaseToken: run.leaseToken },
        data: { files: done, bytes: BigInt(bytes) },
      })
      .catch(() => {});
  };
  const there = await whatIsThere(target, planned, destinationId, lease);
  const copyOne = async (file: PlannedFile) => {
    if (leaseLost.aborted) throw leaseLost.reason;
    const result = (await alreadyThere(target, file, there, destinationId, leaseLost))
      ? { key: file.key, skipped: true, verifiedBy: "already there" }
      : { key: file.key, skipped: false, verifiedBy: (await copyFile(target, file, lease)).verifiedBy };
    results.set(file.key, result);
    lease.moved();
    done++;
    bytes += file.size;
    await report();
  };
  // Small files are latency-bound (a write each, and a check where no listing answered): many at once; larger ones hold a part or block each.
  for (const { upTo, lanes } of LANES) {
    const tier = planned.filter(
      (file) => file.size <= upTo && !LANES.some((lane) => lane.upTo < upTo && file.size <= lane.upTo),
    );
    await pool(tier, lanes, copyOne);
  }
  await report(true);
  return planned.map((file) => results.get(file.key)!);
}

type Found = { listed: Map<string, Present | null>; exportedBefore: Set<string> };

/**
 * What the store holds at the run's keys, from one listing per folder that holds at least
 * LIST_FROM_FILES of them: a key listed is there (with what the listing says), a key of a listed
 * folder not listed is not. For a store that keeps no sha256 (SFTP), the earlier completed runs that
 * wrote a listed key with this file's sha256 are looked up in one query. Keys of folders not listed
 * (few files, a listing refused or too long) are not in the answer: each is asked on its own.
 */
async function whatIsThere(
  target: ExportTarget,
  planned: PlannedFile[],
  destinationId: string,
  lease: HeldLease,
): Promise<Found> {
  const listed = new Map<string, Present | null>();
  const byFolder = new Map<string, PlannedFile[]>();
  for (const file of planned) {
    const folder = file.key.split("/").slice(0, -1).join("/");
    const files = byFolder.get(folder);
    if (files) files.push(file);
    else byFolder.set(folder, [file]);
  }
  // One deadline for all of the attempt's listings: past it, every folder left is checked file by file.
  const deadline = AbortSignal.any([AbortSignal.timeout(LISTING_WITHIN_MS), lease.signal]);
  for (const [folder, files] of byFolder) {
    if (files.length < LIST_FROM_FILES || deadline.aborted) continue;
    const objects = await listOrGiveUp(target, folder, deadline, lease.moved);
    if (!objects) continue;
    for (const file of files) listed.set(file.key, objects.get(file.key) ?? null);
  }
  const unknown = planned.filter((file) => {
    const found = listed.get(file.key);
    return found && found.size === file.size && found.sha256 === null;
  });
  return { listed, exportedBefore: await exportedKeys(target, destinationId, unknown) };
}

/** Whether `file` is in the store already with its sha256: from the listing where there was one, else asked. */
async function alreadyThere(
  target: ExportTarget,
  file: PlannedFile,
  { listed, exportedBefore: exported }: Found,
  destinationId: string,
  leaseLost: AbortSignal,
): Promise<boolean> {
  let found = listed.get(file.key);
  const fromListing = found !== undefined;
  // Not listed, or listed without its metadata (S3's listings carry none) and the same size: ask.
  if (found === undefined || (found && found.size === file.size && found.sha256 === undefined)) {
    found = await target.head(file.key, leaseLost);
  }
  if (!found || found.size !== file.size) return false;
  if (found.sha256 === file.sha256) return true;
  if (found.sha256 !== null) return false;
  return fromListing
    ? exported.has(`${target.fullKey(file.key)} ${file.sha256}`)
    : exportedBefore(destinationId, target.fullKey(file.key), file.sha256);
}

/** Of `files`, those an earlier completed run of this destination wrote to their key with their sha256, as `fullKey sha256`. */
async function exportedKeys(target: ExportTarget, destinationId: string, files: PlannedFile[]): Promise<Set<string>> {
  if (files.length === 0) return new Set();
  const rows = await sqlQuery<{ key: string; sha256: string }>(
    `SELECT DISTINCT f->>'key' AS key, f->>'sha256' AS sha256
     FROM export_runs r CROSS JOIN LATERAL jsonb_array_elements(r.manifest->'files') f
     WHERE r.destination_id = $1 AND r.state = 'completed' AND f->>'key' = ANY($2::text[])`,
    [destinationId, files.map((file) => target.fullKey(file.key))],
  );
  return new Set(rows.map((row) => `${row.key} ${row.sha256}`));
}

/** Whether an earlier completed run of this destination wrote this file's bytes to this key (for stores without metadata: SFTP). */
async function exportedBefore(destinationId: string, key: string, sha256: string): Promise<boolean> {
  const [found] = await sqlQuery<{ id: string }>(
    `SELECT id FROM export_runs WHERE destination_id = $1 AND state = 'completed'
       AND manifest->'files' @> $2::jsonb LIMIT 1`,
    [destinationId, JSON.stringify([{ key, sha256 }])],
  );
  return Boolean(found);
}

/** One file, streamed from its storage into the store; given up when no byte moved for the stall timeout. */
async function copyFile(target: ExportTarget, file: PlannedFile, lease: HeldLease): Promise<{ verifiedBy: string }> {
  const leaseLost = lease.signal;
  const controller = new AbortController();
  const stopOnLease = () => controller.abort(leaseLost.reason);
  leaseLost.addEventListener("abort", stopOnLease, { once: true });
  const stall = stallTimeoutMs();
  const timer = setTimeout(() => controller.abort(new Error(`no byte moved for ${Math.round(stall / 1000)} s`)), stall);
  let source: Readable | undefined;
  try {
    // Every read puts the stall timer back: a local file's by the target, a stream's chunk by chunk below.
    const opened = await openSource(file.location, file.size, {
      signal: controller.signal,
      onRead: () => {
        timer.refresh();
        lease.moved();
      },
    });
    if (!(opened instanceof Readable)) return await target.put(file.key, opened, file, controller.signal);
    source = opened;
    // A pass-through, since a listener on the source itself would start it flowing early.
    const watched = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        timer.refresh();
        lease.moved();
        done(null, chunk);
      },
    });
    source.on("error", (error) => watched.destroy(error));
    source.pipe(watched);
    return await target.put(file.key, watched, file, controller.signal);
  } catch (error) {
    // An abort's reason says more than the stream's "The operation was aborted".
    source?.destroy();
    throw controller.signal.aborted ? (controller.signal.reason as Error) : error;
  } finally {
    clearTimeout(timer);
    leaseLost.removeEventListener("abort", stopOnLease);
  }
}

/** Runs `work` over `items`, at most `size` at once; the first failure stops new work and is thrown once the rest settle. */
async function pool<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const lanes = Array.from({ length: Math.min(size, items.length) }, async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      await work(item).catch((error: unknown) => {
        failure ??= error;
      });
    }
  });
  await Promise.all(lanes);
  if (failure !== undefined) throw failure;
}
