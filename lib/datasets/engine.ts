import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { storableText } from "../contract";
import { dropProcessSingleton, processSingleton } from "../singleton";
import type { Compression, DataFormat } from "./formats";

/**
 * DuckDB, the engine that reads what is inside delivered files: one in-memory instance per
 * process (the worker's, the CLI's), bounded so a file of any size costs the same memory:
 * `DATASET_MEMORY_LIMIT` (default 256MB; DuckDB spills to `DATASET_TEMP_DIR` beyond it) and
 * `DATASET_THREADS` (default 2). Its session zone is UTC, so timestamps with a zone read as UTC.
 */

export type DatasetEngineSettings = { memoryLimit: string; threads: number; tempDir: string };

export function datasetEngineSettings(env: Record<string, string | undefined> = process.env): DatasetEngineSettings {
  const memoryLimit = env.DATASET_MEMORY_LIMIT || "256MB";
  if (!/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i.test(memoryLimit)) {
    throw new Error(`DATASET_MEMORY_LIMIT must be a size such as 256MB or 1GB, got "${memoryLimit}".`);
  }
  const threads = Number(env.DATASET_THREADS || 2);
  if (!Number.isInteger(threads) || threads < 1) {
    throw new Error(`DATASET_THREADS must be a whole number of at least 1, got "${env.DATASET_THREADS}".`);
  }
  const tempDir = path.resolve(env.DATASET_TEMP_DIR || path.join(os.tmpdir(), "dataset-access"));
  return { memoryLimit, threads, tempDir };
}

function engine(): Promise<DuckDBInstance> {
  return processSingleton("datasets:duckdb", () =>
    startEngine().catch((error: unknown) => {
      dropProcessSingleton("datasets:duckdb"); // the next piece of work tries again
      throw error;
    }),
  );
}

async function startEngine(): Promise<DuckDBInstance> {
  const { memoryLimit, threads, tempDir } = datasetEngineSettings();
  await fs.mkdir(tempDir, { recursive: true, mode: 0o700 });
  return DuckDBInstance.create(":memory:", {
    memory_limit: memoryLimit,
    threads: String(threads),
    temp_directory: path.join(tempDir, `duckdb-${process.pid}`),
    // Files are read only as the app hands them over: no extension downloads.
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
  });
}

/** Closes the process's DuckDB, if it was started (a short-lived user such as the demo seed, before it goes on). */
export async function closeDatasetEngine(): Promise<void> {
  const started = dropProcessSingleton<Promise<DuckDBInstance>>("datasets:duckdb");
  if (started) (await started.catch(() => undefined))?.closeSync();
}

/** Runs `work` on a connection of its own, closed afterwards. */
export async function withDuckDB<T>(work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
  const connection = await (await engine()).connect();
  try {
    await connection.run("SET TimeZone = 'UTC'");
    return await work(connection);
  } finally {
    connection.closeSync();
  }
}

/** A path or other text as a SQL string literal. */
export const sqlString = (text: string) => `'${text.replaceAll("'", "''")}'`;
/** A column name as a SQL identifier. */
export const sqlIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * The table function reading a file of `format` at `file`: DuckDB's own readers, the header and
 * types sniffed from the data. CSV is comma-separated and TSV tab-separated, with no lines skipped
 * before the header: a file whose rows do not fit is refused, never read as something else.
 * Compression is said explicitly (temporary copies have no `.gz`).
 */
export function readerSql(file: string, format: DataFormat, compression: Compression): string {
  const path = sqlString(file);
  switch (format) {
    case "csv":
    case "tsv":
      return `read_csv(${path}, delim = ${format === "csv" ? "','" : "'\t'"}, skip = 0, compression = ${compression === "gzip" ? "'gzip'" : "'none'"})`;
    case "json":
    case "jsonl":
      return `read_json(${path}, format = ${format === "json" ? "'array'" : "'newline_delimited'"}, compression = ${compression === "gzip" ? "'gzip'" : "'uncompressed'"})`;
    case "parquet":
      return `read_parquet(${path})`;
  }
}

/** A temporary directory of its own for one piece of work, removed afterwards. */
export async function withTempDir<T>(work: (directory: string) => Promise<T>): Promise<T> {
  const { tempDir } = datasetEngineSettings();
  await fs.mkdir(tempDir, { recursive: true, mode: 0o700 });
  const directory = await fs.mkdtemp(path.join(tempDir, "work-"));
  try {
    return await work(directory);
  } finally {
    await fs.rm(directory, { recursive: true, force: true });
  }
}

/**
 * DuckDB's message about a file, for the buyer: its first paragraph (what follows is advice for
 * DuckDB's own options), every server path in `hide` replaced by the file's name, one line without
 * control characters, at most 500 characters.
 */
export function duckdbMessageFor(error: unknown, fileName: string, hide: string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  let [statement = ""] = message.split(/\n\s*\n|Possible Solution|The search space used/);
  for (const path of hide) statement = statement.replaceAll(path, fileName);
  const cleaned = storableText(statement)
    .replace(/^[\w ]+ Error: /, "")
    .replace(/\s+/g, " ")
    .trim();
  return cleaned.length > 500 ? `${cleaned.slice(0, 500)}…` : cleaned;
}
