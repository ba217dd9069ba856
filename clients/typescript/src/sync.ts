import { promises as fs } from "node:fs";
import path from "node:path";
import type { DatasetAccessClient, Order } from "./client.js";
import { DatasetAccessError, NetworkError, VerificationError } from "./errors.js";
import { isVerified } from "./download.js";

/** `D/.dataset-access.json`: what a sync has verified, so the next one need not hash everything again. */
export const MANIFEST_NAME = ".dataset-access.json";

type ManifestFile = { id: string; sha256: string; size: number };
export type Manifest = {
  version: 1;
  synced_at: string | null;
  orders: Record<string, { name: string; status: string; files: Record<string, ManifestFile> }>;
};

export type SyncReport = {
  orders: number;
  delivered: number;
  /** downloaded: fetched whole; resumed: a partial file continued; repaired: a damaged partial file fetched again whole. */
  files: { total: number; downloaded: number; resumed: number; repaired: number; skipped: number; failed: number };
  bytes_fetched: number;
  refunded: { id: string; name: string; action: "kept" | "deleted" | "absent" }[];
  failures: { order: string; file: string; error: string }[];
  rate_limited_responses: number;
};

export type SyncOptions = {
  dir: string;
  /** Remove the local copies of refunded orders. */
  delete?: boolean;
  onFile?: (event: { order: string; file: string; size: number; done: number; total: number }) => void;
  onBytes?: (bytes: number) => void;
};

async function readManifest(dir: string): Promise<Manifest> {
  try {
    const parsed = JSON.parse(await fs.readFile(path.join(dir, MANIFEST_NAME), "utf8")) as Manifest;
    if (parsed.version === 1 && parsed.orders) return parsed;
  } catch {
    // None yet, or unreadable: every file is checked against the API's sha256 instead.
  }
  return { version: 1, synced_at: null, orders: {} };
}

async function writeManifest(dir: string, manifest: Manifest): Promise<void> {
  const file = path.join(dir, MANIFEST_NAME);
  await fs.writeFile(`${file}.tmp`, JSON.stringify(manifest, null, 2) + "\n");
  await fs.rename(`${file}.tmp`, file);
}

/**
 * Writes the manifest at most once a second while files arrive (rewriting it after each of
 * thousands of small files would cost more than the files), and always at the end. A sync killed
 * in between loses at most a second of entries: those files are found on disk and verified by
 * their sha256 on the next run, not fetched again.
 */
function throttledWriter(write: () => Promise<void>) {
  let last = 0;
  return {
    async soon() {
      if (Date.now() - last < 1000) return;
      last = Date.now();
      await write();
    },
  };
}

/** A file name as the API gives it, kept inside its order's directory whatever it contains. */
function safeName(name: string): string {
  const base = path.basename(name.replaceAll("\\", "/"));
  return base === "" || base === "." || base === ".." ? "_" : base;
}

/**
 * Mirrors every delivered order's files into `dir/<order id>/<file name>`: a file already there
 * with the right size and sha256 is skipped, a partial one resumed, the rest downloaded and
 * verified. Nothing is removed unless `delete` (then refunded orders' directories). The manifest
 * is written as files arrive (at most once a second) and at the end; a sync killed at any point
 * loses at most the file in flight, and that one resumes.
 */
export async function sync(client: DatasetAccessClient, options: SyncOptions): Promise<SyncReport> {
  const dir = path.resolve(options.dir);
  await fs.mkdir(dir, { recursive: true });
  const manifest = await readManifest(dir);
  const report: SyncReport = {
    orders: 0,
    delivered: 0,
    files: { total: 0, downloaded: 0, resumed: 0, repaired: 0, skipped: 0, failed: 0 },
    bytes_fetched: 0,
    refunded: [],
    failures: [],
    rate_limited_responses: 0,
  };
  const manifestWriter = throttledWriter(() => writeManifest(dir, manifest));
  const orders: Order[] = [];
  for await (const order of client.orders.list()) orders.push(order);
  report.orders = orders.length;
  const delivered = orders.filter((order) => order.status === "delivered");
  report.delivered = delivered.length;
  report.files.total = delivered.reduce((sum, order) => sum + order.files.length, 0);

  let done = 0;
  for (const order of delivered) {
    const orderDir = path.join(dir, order.id);
    const entry = (manifest.orders[order.id] ??= { name: order.name, status: order.status, files: {} });
    entry.status = order.status;
    for (const file of order.files) {
      const dest = path.join(orderDir, safeName(file.name));
      const known = entry.files[file.name];
      const stat = await fs.stat(dest).catch(() => undefined);
      const recorded = known?.sha256 === file.sha256 && stat?.size === file.size;
      if (recorded || (stat && (await isVerified(dest, file)))) {
        entry.files[file.name] = { id: file.id, sha256: file.sha256, size: file.size };
        report.files.skipped++;
      } else {
        try {
          const result = await client.files.download(order, file, dest, { onProgress: options.onBytes });
          report.bytes_fetched += result.bytesFetched;
          if (result.restarted) report.files.repaired++;
          else if (result.resumedFrom > 0) report.files.resumed++;
          else report.files.downloaded++;
          entry.files[file.name] = { id: file.id, sha256: file.sha256, size: file.size };
          await manifestWriter.soon();
        } catch (error) {
          if (!(error instanceof VerificationError || error instanceof NetworkError)) {
            if (!(error instanceof DatasetAccessError) || error.status === 401 || error.status === 403) throw error;
          }
          report.files.failed++;
          report.failures.push({ order: order.id, file: file.name, error: (error as Error).message });
        }
      }
      options.onFile?.({ order: order.id, file: file.name, size: file.size, done: ++done, total: report.files.total });
    }
  }

  for (const order of orders.filter((candidate) => candidate.status === "refunded")) {
    const orderDir = path.join(dir, order.id);
    const present = await fs.stat(orderDir).then(
      () => true,
      () => false,
    );
    if (!present) {
      report.refunded.push({ id: order.id, name: order.name, action: "absent" });
    } else if (options.delete) {
      await fs.rm(orderDir, { recursive: true, force: true });
      delete manifest.orders[order.id];
      report.refunded.push({ id: order.id, name: order.name, action: "deleted" });
    } else {
      if (manifest.orders[order.id]) manifest.orders[order.id]!.status = "refunded";
      report.refunded.push({ id: order.id, name: order.name, action: "kept" });
    }
  }
  manifest.synced_at = new Date().toISOString();
  await writeManifest(dir, manifest);
  report.rate_limited_responses = client.rateLimitedResponses;
  return report;
}
