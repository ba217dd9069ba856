import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { storableText } from "../contract";
import type { Compression, DataFormat } from "../data-formats";
import { workDirectoryPrefix } from "./left-directories";

/**
 * DuckDB, the engine that reads what is inside delivered files, and the rules every use of it
 * follows. DuckDB never runs in a process that serves requests: file content can crash it (a JSON
 * value nested 50,000 deep is a segmentation fault), so it runs in child processes of its own
 * (./engine-pool.ts, ./engine-child.ts), one task at a time, each task in a DuckDB instance that
 * reads and writes only the task's own directory and the files handed to it (a buyer's read-only
 * query: the instance kept for exactly its files, with a private directory of its own, ./kept-engine.ts).
 *
 * Settings (environment):
 * - `DATASET_MEMORY_LIMIT` (default 256MB): DuckDB's memory_limit; it spills to the task's directory beyond it;
 * - `DATASET_SPILL_MAX` (default 50GB): DuckDB's max_temp_directory_size, what one task may spill (its own
 *   default is 90% of the free disk): a task needing more fails with a sentence naming the setting;
 * - `DATASET_THREADS` (default 2);
 * - `DATASET_TEMP_DIR` (default `dataset-access` under the system's temporary directory): the root of every task's
 *   private directory; it must be this user's own (./temp-root.ts);
 * - `DATASET_PROCESS_MEMORY_MAX` (default 2GB): an engine process above this resident memory is killed and its
 *   file failed (DuckDB's limit does not cover everything, e.g. one huge JSON value);
 * - `DATASET_TASK_TIMEOUT_SECONDS` (default 10800, three hours): a task running longer is killed and its file
 *   failed, well before the queue takes its job for lost (four hours).
 */

export type DatasetEngineSettings = {
  memoryLimit: string;
  spillMax: string;
  threads: number;
  tempDir: string;
  processMemoryMaxBytes: number;
  taskTimeoutMs: number;
};

const SIZE = /^(\d+(?:\.\d+)?)\s*(KB|MB|GB|KiB|MiB|GiB)$/i;
const UNIT_BYTES: Record<string, number> = {
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};

/** `value` in bytes, from a size such as 256MB or 1GB; the error names the setting `name`. */
export function sizeSetting(name: string, value: string): number {
  const match = SIZE.exec(value);
  if (!match) throw new Error(`${name} must be a size such as 256MB or 1GB, got "${value}".`);
  return Number(match[1]) * UNIT_BYTES[match[2]!.toLowerCase()]!;
}

export function datasetEngineSettings(env: Record<string, string | undefined> = process.env): DatasetEngineSettings {
  const memoryLimit = env.DATASET_MEMORY_LIMIT || "256MB";
  const memoryLimitBytes = sizeSetting("DATASET_MEMORY_LIMIT", memoryLimit);
  const spillMax = env.DATASET_SPILL_MAX || "50GB";
  sizeSetting("DATASET_SPILL_MAX", spillMax);
  const threads = Number(env.DATASET_THREADS || 2);
  if (!Number.isInteger(threads) || threads < 1) {
    throw new Error(`DATASET_THREADS must be a whole number of at least 1, got "${env.DATASET_THREADS}".`);
  }
  const processMemoryMaxBytes = sizeSetting("DATASET_PROCESS_MEMORY_MAX", env.DATASET_PROCESS_MEMORY_MAX || "2GB");
  if (processMemoryMaxBytes < memoryLimitBytes + 256 * 1024 ** 2) {
    throw new Error(
      `DATASET_PROCESS_MEMORY_MAX (${env.DATASET_PROCESS_MEMORY_MAX}) must be at least 256 MB above DATASET_MEMORY_LIMIT (${memoryLimit}).`,
    );
  }
  const timeoutSeconds = Number(env.DATASET_TASK_TIMEOUT_SECONDS || 3 * 3600);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    throw new Error(
      `DATASET_TASK_TIMEOUT_SECONDS must be a positive number of seconds, got "${env.DATASET_TASK_TIMEOUT_SECONDS}".`,
    );
  }
  const tempDir = path.resolve(
    /* turbopackIgnore: true */ env.DATASET_TEMP_DIR || path.join(os.tmpdir(), "dataset-access"),
  );
  return { memoryLimit, spillMax, threads, tempDir, processMemoryMaxBytes, taskTimeoutMs: timeoutSeconds * 1000 };
}

/** DuckDB's error when a task's spill reached max_temp_directory_size. */
export const SPILL_LIMIT = /max_temp_directory_size/;

/** A path or other text as a SQL string literal. */
export const sqlString = (text: string) => `'${text.replaceAll("'", "''")}'`;
/** A column name as a SQL identifier. */
export const sqlIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The field separators a `.csv` file may use (scraped European data often uses `;`); `.tsv` is tab-separated. */
export const CSV_DELIMITERS = [",", ";", "\t", "|"] as const;
export type CsvDelimiter = (typeof CSV_DELIMITERS)[number];

/**
 * The table function reading a file of `format` at `file`: DuckDB's own readers, the header and
 * types sniffed from the data. A CSV is read with the delimiter found for it (./engine-tasks.ts:
 * one of CSV_DELIMITERS), TSV with tab, with no lines skipped before the header: a file whose rows
 * do not fit is refused, never read as something else. Compression is said explicitly (temporary
 * copies have no `.gz`).
 */
export function readerSql(
  file: string,
  format: DataFormat,
  compression: Compression,
  delimiter: CsvDelimiter = ",",
): string {
  const path = sqlString(file);
  switch (format) {
    case "csv":
    case "tsv":
      return `read_csv(${path}, delim = ${sqlString(format === "tsv" ? "\t" : delimiter)}, skip = 0, compression = ${compression === "gzip" ? "'gzip'" : "'none'"})`;
    case "json":
    case "jsonl":
      return `read_json(${path}, format = ${format === "json" ? "'array'" : "'newline_delimited'"}, compression = ${compression === "gzip" ? "'gzip'" : "'uncompressed'"})`;
    case "parquet":
      return `read_parquet(${path})`;
  }
}

/**
 * DuckDB's message about a file, for the buyer: its first paragraph (what follows is advice for
 * DuckDB's own options), every server path in `hide` replaced by the file's name, one line without
 * control characters, at most 500 characters.
 */
export function duckdbMessageFor(error: unknown, fileName: string, hide: string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  // DuckDB's own advice here (a PRAGMA) is not the reader's to follow: the operator's setting is named.
  if (SPILL_LIMIT.test(message)) {
    return `it needed more temporary disk space than the data engine may use (DATASET_SPILL_MAX, ${datasetEngineSettings().spillMax}).`;
  }
  let [statement = ""] = message.split(/\n\s*\n|Possible Solution|The search space used/);
  // Longest first, so a directory never cuts a path inside it in two.
  for (const path of [...hide].sort((a, b) => b.length - a.length)) statement = statement.replaceAll(path, fileName);
  const cleaned = storableText(statement)
    .replace(/^[\w ]+ Error: /, "")
    .replace(/\s+/g, " ")
    .trim();
  return cleaned.length > 500 ? `${cleaned.slice(0, 500)}…` : cleaned;
}

/**
 * The temporary root, checked to be this user's own: created 0700 when missing; refused when it
 * exists with another owner, with access for group or others, or as a symbolic link, since another
 * local user could then swap a task's directory and read a buyer's data. Every task's directory is
 * created fresh under it by mkdtemp (0700). Checked once per process (the server and the worker
 * call it at start, so they refuse to start on such a root); the error names DATASET_TEMP_DIR.
 */
export async function privateTempRoot(settings = datasetEngineSettings()): Promise<string> {
  const root = settings.tempDir;
  if (checkedRoots.has(root)) return root;
  await fs.mkdir(path.dirname(root), { recursive: true });
  await fs.mkdir(root, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw tempRootError(root, `it cannot be created (${error.code})`);
  });
  const stat = await fs.lstat(root);
  const uid = process.getuid?.();
  if (stat.isSymbolicLink()) throw tempRootError(root, "it is a symbolic link");
  if (!stat.isDirectory()) throw tempRootError(root, "it is not a directory");
  if (uid !== undefined && stat.uid !== uid) {
    throw tempRootError(root, `it belongs to user id ${stat.uid}, not to this server's user (${uid})`);
  }
  if ((stat.mode & 0o077) !== 0) {
    throw tempRootError(
      root,
      `other users have access to it (mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")})`,
    );
  }
  checkedRoots.add(root);
  return root;
}
const checkedRoots = new Set<string>();

function tempRootError(root: string, why: string): Error {
  return new Error(
    `The data engine's temporary directory ${root} (DATASET_TEMP_DIR) cannot be used: ${why}. ` +
      "Set DATASET_TEMP_DIR to a directory only this server's user can enter (mode 700), or remove this one so it is created so.",
  );
}

/**
 * The path of a private directory for one buyer's query, not made: the engine process makes it
 * (0700) only if the query runs in an instance of its own (./task-engine.ts openTaskEngine); one on
 * a kept instance spills into that instance's directory (0.43 ms of mkdtemp and rm saved a query).
 * Removed afterwards if it was made. The name is as unguessable as mkdtemp's, under the private root.
 */
export function withTaskDirectoryPath<T>(work: (directory: string) => Promise<T>): Promise<T> {
  return withDirectoryRemoved(
    async (root) => path.join(root, `${workDirectoryPrefix(process.pid)}${randomBytes(9).toString("base64url")}`),
    work,
  );
}

/** A private temporary directory (0700) for one piece of work, removed afterwards. */
export function withTempDir<T>(work: (directory: string) => Promise<T>): Promise<T> {
  return withDirectoryRemoved((root) => fs.mkdtemp(path.join(root, workDirectoryPrefix(process.pid))), work);
}

/** `work` on the directory `named` under the private root, removed afterwards whatever happens. */
async function withDirectoryRemoved<T>(
  named: (root: string) => Promise<string>,
  work: (directory: string) => Promise<T>,
): Promise<T> {
  const directory = await named(await privateTempRoot());
  try {
    return await work(directory);
  } finally {
    await fs.rm(directory, { recursive: true, force: true });
  }
}
