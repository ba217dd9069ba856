import { promises as fs } from "node:fs";
import path from "node:path";
import type { DatasetAccessClient, Order, OrderFile } from "./client.js";
import {
  DatasetAccessError,
  NetworkError,
  NoRenditionError,
  RenditionPendingError,
  UnsafeResponseError,
  VerificationError,
} from "./errors.js";
import { isVerified, type ExpectedFile } from "./download.js";
import {
  deferringPending,
  expectedBytes,
  isRendition,
  planDirectory,
  type RenditionFormat,
  type RenditionWait,
} from "./formats.js";
import { orderIdProblem, pathInside, targetDirectory } from "./paths.js";

/** `D/.dataset-access.json`: what a sync has verified, so the next one need not hash everything again. */
export const MANIFEST_NAME = ".dataset-access.json";

/**
 * A file a sync wrote, by its name on disk: the API's file, and what the bytes are: the original
 * (`rendition` false, `format` the file's own) or a rendition the server made (`format` parquet, csv
 * or jsonl). Manifests written before formats have neither field: their files are originals.
 */
type ManifestFile = { id: string; sha256: string; size: number; format?: string; rendition?: boolean };
type ManifestOrder = { name: string; status: string; files: Record<string, ManifestFile> };
export type Manifest = {
  version: 1;
  synced_at: string | null;
  /** By order id, then by name on disk: only ids and names that passed the checks of paths.ts. */
  orders: Record<string, ManifestOrder>;
};

/** Something the server named that the sync did not touch, and why (`file` null: the whole order). */
export type Refusal = { order: string; file: string | null; reason: string };

/** A file that cannot be had in the format asked (binary, unreadable data), and why: not fetched. */
export type NoRendition = { order: string; file: string; reason: string };

/**
 * kept: left as it is (no `delete`); never_downloaded: no copy of it here (nothing to remove); deleted: the
 * files this tool wrote removed (`deleted`), and the directory too unless something else is `left` in it;
 * refused: its id or directory is unsafe.
 */
export type RefundedOrder =
  | { id: string; name: string; action: "kept" | "never_downloaded" | "refused" }
  | { id: string; name: string; action: "deleted"; deleted: string[]; left: string[] };

export type SyncReport = {
  /** The format asked for (null: every file as it is). */
  format: RenditionFormat | null;
  orders: number;
  delivered: number;
  /**
   * downloaded: fetched whole; resumed: a partial file continued; repaired: a damaged partial file
   * fetched again whole; refused: not touched, because of an unsafe id, name or path (see `refused`);
   * no_rendition: not fetched, having no rendition in the format asked (see `no_rendition`).
   */
  files: {
    total: number;
    downloaded: number;
    resumed: number;
    repaired: number;
    skipped: number;
    failed: number;
    refused: number;
    no_rendition: number;
  };
  bytes_fetched: number;
  refunded: RefundedOrder[];
  /**
   * Files this tool wrote for a delivered order that are no longer in its `files` list (the parts
   * of a table's earlier snapshot version, once a new version is made; or, synced from an older
   * server, the parts of a failed or rejected publication): `kept`, or with `delete` `deleted`.
   */
  superseded: { order: string; file: string; action: "kept" | "deleted" }[];
  failures: { order: string; file: string; error: string }[];
  refused: Refusal[];
  no_rendition: NoRendition[];
  rate_limited_responses: number;
};

export type SyncOptions = {
  dir: string;
  /** Remove what this tool wrote for refunded orders. */
  delete?: boolean;
  /**
   * Every data file as this rendition (its name's extension replaced: `products.parquet`) instead
   * of the original; a file in this format already is fetched as it is. See docs/clients.md.
   */
  format?: RenditionFormat;
  onFile?: (event: { order: string; file: string; size: number; done: number; total: number }) => void;
  onBytes?: (bytes: number) => void;
  /** Files fetched at once (default 4): small files are dominated by each one's two round trips. */
  concurrency?: number;
};

export const DEFAULT_SYNC_CONCURRENCY = 4;

/** A record without a prototype: a file named `__proto__` is a key like any other. */
function emptyRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

async function readManifest(dir: string): Promise<Manifest> {
  const manifest: Manifest = { version: 1, synced_at: null, orders: emptyRecord() };
  try {
    const parsed = JSON.parse(await fs.readFile(path.join(dir, MANIFEST_NAME), "utf8")) as Manifest;
    if (parsed.version !== 1 || !parsed.orders) return manifest;
    manifest.synced_at = parsed.synced_at;
    for (const [id, order] of Object.entries(parsed.orders))
      manifest.orders[id] = { ...order, files: Object.assign(emptyRecord<ManifestFile>(), order.files) };
  } catch {
    // None yet, or unreadable: every file is checked against the API's sha256 instead.
  }
  return manifest;
}

async function writeManifest(dir: string, manifest: Manifest): Promise<void> {
  const file = path.join(dir, MANIFEST_NAME);
  await fs.writeFile(`${file}.tmp`, JSON.stringify(manifest, null, 2) + "\n");
  await fs.rename(`${file}.tmp`, file);
}

/** Removes `file` if it is a regular file (what this tool writes; a link or directory stays). */
async function removeRegularFile(file: string): Promise<boolean> {
  const stat = await fs.lstat(file).catch(() => undefined);
  if (!stat?.isFile()) return false;
  await fs.unlink(file);
  return true;
}

/**
 * Writes the manifest at most once a second while files arrive (rewriting it after each of
 * thousands of small files would cost more than the files), and always at the end. A sync killed
 * in between loses at most a second of entries: those files are found on disk and verified by
 * their sha256 on the next run, not fetched again.
 */
function throttledWriter(write: () => Promise<void>) {
  let last = 0;
  // Files arrive several at once: one write at a time (they share the manifest's temporary file).
  let writing: Promise<void> | undefined;
  return {
    async soon() {
      if (writing || Date.now() - last < 1000) return;
      last = Date.now();
      writing = write().finally(() => (writing = undefined));
      await writing;
    },
    /** Waits for a write in progress, so the last one comes after it. */
    async settled() {
      await writing;
    },
  };
}

/** A file of a delivered order to sync, under its name on disk (its own, or its rendition's). */
type SyncItem = { order: Order; entry: ManifestOrder; file: OrderFile; name: string };

/**
 * Mirrors every delivered order's files into `dir/<order id>/<file name>`: a file already there
 * with the right size and sha256 is skipped, a partial one resumed, the rest downloaded and
 * verified, `concurrency` at a time. It follows each order's `files` list: nothing is removed
 * unless `delete`, which removes what the manifest says this tool wrote for refunded orders, and
 * for delivered orders the files that left the list (a new snapshot version's old parts). The manifest is written as files arrive (at most once a second) and at the end;
 * a sync killed at any point loses at most the file in flight, and that one resumes.
 *
 * With `format`, each data file is fetched as that rendition, verified by the rendition's own size
 * and sha256; files with none possible are listed in `no_rendition`. Renditions being made are come
 * back to after the other files, waiting at most the client's `renditionWaitMs` for each.
 *
 * Ids and names come from a server that may not be the real one: an order or file whose id is not
 * the API's, whose name is unsafe, or whose path meets a symbolic link is skipped and listed in
 * `refused`; nothing is ever created or deleted outside `dir`.
 */
export async function sync(client: DatasetAccessClient, options: SyncOptions): Promise<SyncReport> {
  const root = await targetDirectory(options.dir);
  const manifest = await readManifest(root);
  const report: SyncReport = {
    format: options.format ?? null,
    orders: 0,
    delivered: 0,
    files: { total: 0, downloaded: 0, resumed: 0, repaired: 0, skipped: 0, failed: 0, refused: 0, no_rendition: 0 },
    bytes_fetched: 0,
    refunded: [],
    superseded: [],
    failures: [],
    refused: [],
    no_rendition: [],
    rate_limited_responses: 0,
  };
  // Files are fetched several at once: what they add to the report is ranked by the file's place
  // (and pass), and put in that order at the end, so a report reads the same from run to run.
  const ranks = new Map<object, number>();
  const ranked = <T extends object>(entry: T, rank: number | undefined) => {
    if (rank !== undefined) ranks.set(entry, rank);
    return entry;
  };
  const refuse = (order: Order, file: string | null, reason: string, rank?: number) =>
    report.refused.push(ranked({ order: String(order.id), file, reason }, rank));
  const noRendition = (order: Order, file: OrderFile, reason: string, rank?: number) => {
    report.files.no_rendition++;
    report.no_rendition.push(ranked({ order: order.id, file: file.name, reason }, rank));
  };
  const manifestWriter = throttledWriter(() => writeManifest(root, manifest));
  const orders: Order[] = [];
  for await (const order of client.orders.list()) orders.push(order);
  report.orders = orders.length;
  const delivered = orders.filter((order) => order.status === "delivered");
  report.delivered = delivered.length;
  report.files.total = delivered.reduce((sum, order) => sum + order.files.length, 0);

  /** What the manifest records of a file on disk whose bytes are `expected`. */
  const recordOf = (file: OrderFile, expected: ExpectedFile): ManifestFile => {
    const rendition = isRendition(file, options.format);
    const format = rendition ? options.format! : file.format;
    return { id: file.id, sha256: expected.sha256, size: expected.size, format, rendition };
  };

  /**
   * One file of a delivered order: skipped (already there, when its sha256 is known), downloaded,
   * failed, or without a rendition. A rendition still being made throws RenditionPendingError on
   * all but the last pass (`wait.final`), where it is a failure.
   */
  async function syncFile({ order, entry, file, name }: SyncItem, wait: RenditionWait, rank: number): Promise<void> {
    const dest = await pathInside(root, order.id, name);
    const expected = expectedBytes(file, options.format);
    const known = entry.files[name];
    const stat = await fs.lstat(dest).catch(() => undefined);
    if (expected) {
      const recorded = known?.sha256 === expected.sha256 && stat?.isFile() && stat.size === expected.size;
      if (recorded || (stat && (await isVerified(dest, expected)))) {
        entry.files[name] = recordOf(file, expected);
        report.files.skipped++;
        return;
      }
    }
    try {
      const result = await client.files.download(order, file, dest, {
        onProgress: options.onBytes,
        format: options.format,
        renditionWaitMs: wait.ms,
      });
      report.bytes_fetched += result.bytesFetched;
      if (result.restarted) report.files.repaired++;
      else if (result.resumedFrom > 0) report.files.resumed++;
      else report.files.downloaded++;
      entry.files[name] = recordOf(file, result);
      await manifestWriter.soon();
    } catch (error) {
      if (error instanceof RenditionPendingError && !wait.final) throw error;
      // The order said a rendition was possible, the API says not (the file changed since).
      if (error instanceof NoRenditionError) return noRendition(order, file, error.message, rank);
      const fileFailed =
        error instanceof VerificationError || error instanceof NetworkError || error instanceof RenditionPendingError;
      if (!fileFailed && (!(error instanceof DatasetAccessError) || error.status === 401 || error.status === 403))
        throw error;
      report.files.failed++;
      report.failures.push(ranked({ order: order.id, file: file.name, error: (error as Error).message }, rank));
    }
  }

  let done = 0;
  const progress = (order: Order, file: OrderFile) =>
    options.onFile?.({ order: order.id, file: file.name, size: file.size, done: ++done, total: report.files.total });
  const items: SyncItem[] = [];
  for (const order of delivered) {
    const orderProblem = orderIdProblem(order.id);
    if (orderProblem) {
      refuse(order, null, orderProblem);
      report.files.refused += order.files.length;
      for (const file of order.files) progress(order, file);
      continue;
    }
    const entry = (manifest.orders[order.id] ??= { name: order.name, status: order.status, files: emptyRecord() });
    entry.status = order.status;
    for (const planned of planDirectory(order.files, options.format)) {
      if (planned.refused) {
        report.files.refused++;
        refuse(order, String(planned.file.name), planned.refused);
      } else if (planned.noRendition) {
        noRendition(order, planned.file, planned.noRendition);
      } else {
        items.push({ order, entry, file: planned.file, name: planned.name });
        continue;
      }
      progress(order, planned.file);
    }
  }
  const itemIndex = new Map(items.map((item, index) => [item, index]));
  await deferringPending(
    items,
    client.renditionWaitMs,
    async (item, wait) => {
      const rank = (wait.final ? items.length : 0) + itemIndex.get(item)!;
      try {
        await syncFile(item, wait, rank);
      } catch (error) {
        if (!(error instanceof UnsafeResponseError)) throw error;
        report.files.refused++;
        refuse(item.order, item.file.name, error.message, rank);
      }
      progress(item.order, item.file);
    },
    options.concurrency ?? DEFAULT_SYNC_CONCURRENCY,
  );
  await manifestWriter.settled();
  const byRank = (a: object, b: object) => (ranks.get(a) ?? -1) - (ranks.get(b) ?? -1);
  report.refused.sort(byRank);
  report.failures.sort(byRank);
  report.no_rendition.sort(byRank);

  /**
   * The files the manifest records for a delivered order whose id left its `files` list (a new
   * snapshot version replaced them): reported, and with `delete` removed (regular files only).
   */
  async function settleSuperseded(order: Order): Promise<void> {
    const entry = manifest.orders[order.id];
    if (!entry || orderIdProblem(order.id)) return;
    const listed = new Set(order.files.map((file) => file.id));
    // Sorted: files arrive several at once, so the manifest's order is the order they happened to finish in.
    for (const name of Object.keys(entry.files).sort()) {
      if (listed.has(entry.files[name]!.id)) continue;
      if (!options.delete) {
        report.superseded.push({ order: order.id, file: name, action: "kept" });
        continue;
      }
      try {
        await removeRegularFile(await pathInside(root, order.id, name));
        delete entry.files[name];
        report.superseded.push({ order: order.id, file: name, action: "deleted" });
      } catch (error) {
        if (!(error instanceof UnsafeResponseError)) throw error;
        refuse(order, name, error.message);
      }
    }
  }
  for (const order of delivered) await settleSuperseded(order);

  /** A refunded order's local copy: reported, and with `delete` what this tool wrote of it removed. */
  async function settleRefunded(order: Order): Promise<RefundedOrder> {
    const summary = { id: String(order.id), name: order.name };
    let orderDir: string;
    try {
      const problem = orderIdProblem(order.id);
      if (problem) throw new UnsafeResponseError(problem);
      orderDir = await pathInside(root, order.id);
    } catch (error) {
      if (!(error instanceof UnsafeResponseError)) throw error;
      refuse(order, null, error.message);
      return { ...summary, action: "refused" };
    }
    const present = (await fs.lstat(orderDir).catch(() => undefined))?.isDirectory();
    if (!present) return { ...summary, action: "never_downloaded" };
    const entry = manifest.orders[order.id];
    if (!options.delete) {
      if (entry) entry.status = "refunded";
      return { ...summary, action: "kept" };
    }
    const deleted: string[] = [];
    for (const name of Object.keys(entry?.files ?? {}).sort()) {
      try {
        if (await removeRegularFile(await pathInside(root, order.id, name))) deleted.push(name);
      } catch (error) {
        if (!(error instanceof UnsafeResponseError)) throw error;
        refuse(order, name, error.message);
      }
    }
    delete manifest.orders[order.id];
    const left = (await fs.readdir(orderDir)).sort();
    if (left.length === 0) await fs.rmdir(orderDir);
    return { ...summary, action: "deleted", deleted, left };
  }

  for (const order of orders.filter((candidate) => candidate.status === "refunded")) {
    report.refunded.push(await settleRefunded(order));
  }
  manifest.synced_at = new Date().toISOString();
  await writeManifest(root, manifest);
  report.rate_limited_responses = client.rateLimitedResponses;
  return report;
}
