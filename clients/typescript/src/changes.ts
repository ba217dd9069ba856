import { promises as fs } from "node:fs";
import path from "node:path";
import type { DatasetAccessClient, Changes, Version } from "./client.js";
import {
  DatasetAccessError,
  NetworkError,
  RenditionPendingError,
  UnsafeResponseError,
  VerificationError,
} from "./errors.js";
import { deferringPending, type RenditionFormat } from "./formats.js";
import { countOf, forTerminal } from "./terminal.js";
import { orderIdProblem, pathInside, targetDirectory } from "./paths.js";
import { notPassedReason, qualityOf, type Quality } from "./quality.js";

/** `D/.dataset-access-changes.json`: the change files a `changes` run wrote into D, with their size and sha256. */
export const CHANGES_MANIFEST_NAME = ".dataset-access-changes.json";

/** A table's name as the API makes them (contract Part 4): also safe as the start of a file name. */
const TABLE_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** The name a version's change file gets on disk: `products.v7.changes.parquet`. */
export function changeFileName(table: string, version: number, format: RenditionFormat): string {
  return `${table}.v${version}.changes.${format}`;
}

type RecordedChangeFile = {
  order: string;
  table: string;
  version: number;
  format: RenditionFormat;
  size: number;
  sha256: string;
  /** What vouched for the bytes when they were written: the server's sha256 (its ETag), or their size alone. */
  verified_by: "sha256" | "size";
};
type ChangesManifest = { version: 1; files: Record<string, RecordedChangeFile> };

export type ChangeFileReport = {
  version: number;
  file: string;
  path: string;
  size: number;
  sha256: string;
  verified_by: "sha256" | "size";
  /** written: fetched in this run (`resumed_from` > 0: a partial file continued); skipped: already there. */
  action: "written" | "skipped";
  bytes_fetched: number;
  resumed_from: number;
  changes: Changes | null;
  created_at: string;
};

export type ChangesReport = {
  order: string;
  table: string;
  format: RenditionFormat;
  since: number;
  /** The table's current version (null before the first). */
  current_version: number | null;
  /**
   * The last version whose change file is in the directory with every version from `since + 1` up
   * to it: the `--since` of the next run. `since` itself when nothing after it could be written.
   */
  last_version: number;
  files: ChangeFileReport[];
  /** Versions after `since` that were pruned: their changes cannot be had, read the table whole instead. */
  pruned: number[];
  failures: { version: number; error: string }[];
  /**
   * The first version after `since` whose quality is not `passed` (warned, or held and released),
   * without `acceptWarnings`: nothing of it or of later versions was fetched.
   */
  refused: { version: number; status: Quality["status"]; reason: string | null; message: string } | null;
};

export type ChangesOptions = {
  order: string;
  table: string;
  /** The version already read: change files of the versions after it are fetched (0: from the first). */
  since: number;
  dir: string;
  format?: RenditionFormat;
  /** Apply versions whose quality is warned or released too (by default `changes` stops before the first). */
  acceptWarnings?: boolean;
  onFile?: (event: { version: number; file: string; done: number; total: number }) => void;
  onBytes?: (bytes: number) => void;
};

function emptyRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

async function readManifest(dir: string): Promise<ChangesManifest> {
  try {
    const parsed = JSON.parse(await fs.readFile(path.join(dir, CHANGES_MANIFEST_NAME), "utf8")) as ChangesManifest;
    if (parsed.version === 1 && parsed.files && typeof parsed.files === "object")
      return { version: 1, files: Object.assign(emptyRecord<RecordedChangeFile>(), parsed.files) };
  } catch {
    // None yet, or unreadable: files found without an entry are fetched again.
  }
  return { version: 1, files: emptyRecord() };
}

async function writeManifest(dir: string, manifest: ChangesManifest): Promise<void> {
  const file = path.join(dir, CHANGES_MANIFEST_NAME);
  await fs.writeFile(`${file}.tmp`, JSON.stringify(manifest, null, 2) + "\n");
  await fs.rename(`${file}.tmp`, file);
}

/**
 * Fetches the change files of a table's versions after `since` into `dir`, as
 * `<table>.v<version>.changes.<format>` (Parquet by default): each resumable (`.part`, Range), checked
 * against the size its link answers and the sha256 its ETag gives where the server gives one, and
 * recorded with its sha256 in `dir/.dataset-access-changes.json`. A file recorded there and present
 * with its size is skipped, so a run killed at any point and run again fetches only what is missing.
 * CSV and JSON Lines forms are made by the server on first request (202): every version is asked for
 * first, then those being made are waited for (the client's `renditionWaitMs` each).
 *
 * `last_version` in the report is what to pass as `since` next time: the highest version up to
 * which every change file after `since` is in the directory. A pruned version after `since` is
 * reported under `pruned` and stops `last_version` before it.
 */
export async function changes(client: DatasetAccessClient, options: ChangesOptions): Promise<ChangesReport> {
  const format = options.format ?? "parquet";
  const orderProblem = orderIdProblem(options.order);
  if (orderProblem)
    throw new DatasetAccessError(404, { code: "order_not_found", detail: `${options.order}: ${orderProblem}.` });
  if (!TABLE_NAME.test(options.table))
    throw new DatasetAccessError(404, {
      code: "table_not_found",
      detail: `${JSON.stringify(options.table)} is not a table name (^[a-z][a-z0-9_]{0,62}$).`,
    });
  if (!Number.isInteger(options.since) || options.since < 0) throw new RangeError("since must be a whole number >= 0");
  const root = await targetDirectory(options.dir);
  const manifest = await readManifest(root);
  const table = await client.tables.get(options.order, options.table);
  const report: ChangesReport = {
    order: options.order,
    table: options.table,
    format,
    since: options.since,
    current_version: table.version,
    last_version: options.since,
    files: [],
    pruned: [],
    failures: [],
    refused: null,
  };
  const wanted: Version[] = [];
  if (table.version !== null && table.version > options.since) {
    for await (const version of client.tables.versions(options.order, options.table)) {
      // The number names a file here: a server's answer that is no positive integer is refused.
      if (!Number.isSafeInteger(version.version) || version.version < 1)
        throw new UnsafeResponseError(`the server listed a version ${JSON.stringify(version.version)}: not a number`);
      if (version.version <= options.since) break;
      wanted.push(version);
    }
  }
  wanted.reverse();
  const kept = new Set(wanted.map((version) => version.version));
  // A version not passed stops the run before it: the ones before it are fetched, it and later ones are not.
  const stop = options.acceptWarnings ? -1 : wanted.findIndex((version) => qualityOf(version).status !== "passed");
  if (stop >= 0) {
    const { version } = wanted[stop]!;
    const quality = qualityOf(wanted[stop]!);
    const message = notPassedReason(options.table, version, quality);
    report.refused = { version, status: quality.status, reason: quality.reason, message };
    wanted.splice(stop);
  }
  const upTo = report.refused ? report.refused.version - 1 : (table.version ?? 0);
  for (let version = options.since + 1; version <= upTo; version++) if (!kept.has(version)) report.pruned.push(version);

  let done = 0;
  const finished = (version: Version, file: string) =>
    options.onFile?.({ version: version.version, file, done: ++done, total: wanted.length });
  await deferringPending(wanted, client.renditionWaitMs, async (version, wait) => {
    const name = changeFileName(options.table, version.version, format);
    const dest = await pathInside(root, name);
    const entry = (result: Omit<ChangeFileReport, "version" | "file" | "path" | "changes" | "created_at">) =>
      report.files.push({
        version: version.version,
        file: name,
        path: dest,
        ...result,
        changes: version.changes,
        created_at: version.created_at,
      });
    const recorded = manifest.files[name];
    const stat = await fs.lstat(dest).catch(() => undefined);
    if (
      recorded &&
      recorded.order === options.order &&
      recorded.table === options.table &&
      recorded.version === version.version &&
      stat?.isFile() &&
      stat.size === recorded.size
    ) {
      entry({
        size: recorded.size,
        sha256: recorded.sha256,
        verified_by: recorded.verified_by,
        action: "skipped",
        bytes_fetched: 0,
        resumed_from: 0,
      });
      finished(version, name);
      return;
    }
    try {
      const result = await client.tables.downloadChanges(options.order, options.table, version.version, dest, {
        format,
        waitMs: wait.ms,
        onProgress: options.onBytes,
      });
      manifest.files[name] = {
        order: options.order,
        table: options.table,
        version: version.version,
        format,
        size: result.size,
        sha256: result.sha256,
        verified_by: result.verifiedBy,
      };
      await writeManifest(root, manifest);
      entry({
        size: result.size,
        sha256: result.sha256,
        verified_by: result.verifiedBy,
        action: "written",
        bytes_fetched: result.bytesFetched,
        resumed_from: result.resumedFrom,
      });
    } catch (error) {
      if (error instanceof RenditionPendingError && !wait.final) throw error;
      const fileFailed =
        error instanceof VerificationError ||
        error instanceof NetworkError ||
        error instanceof RenditionPendingError ||
        (error instanceof DatasetAccessError && error.code === "version_not_found");
      if (!fileFailed) throw error;
      report.failures.push({ version: version.version, error: (error as Error).message });
    }
    finished(version, name);
  });
  report.files.sort((a, b) => a.version - b.version);
  const present = new Set(report.files.map((file) => file.version));
  while (present.has(report.last_version + 1)) report.last_version++;
  return report;
}

/** The report of the `changes` command for a person: counts and problems on stderr, the next --since on stdout. */
export function printChangesReport(report: ChangesReport): void {
  const written = report.files.filter((file) => file.action === "written").length;
  const skipped = report.files.length - written;
  console.error(
    `${forTerminal(report.table)}: current version ${report.current_version ?? "none"}; ${countOf(written, "change file")} written, ${skipped} already there.`,
  );
  if (report.pruned.length > 0)
    console.error(
      `Pruned: versions ${report.pruned.join(", ")} are no longer kept: read the table's current version whole instead.`,
    );
  for (const failure of report.failures)
    console.error(`Failed: version ${failure.version}: ${forTerminal(failure.error)}`);
  if (report.refused) console.error(forTerminal(report.refused.message));
  console.log(`Last version written: ${report.last_version}`);
}
