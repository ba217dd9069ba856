import { createReadStream, promises as fs } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { formatBytes } from "../format";
import type { Compression, DataFormat } from "../data-formats";

/**
 * The checks made on a file's bytes before DuckDB reads them, in the engine process
 * (./engine-tasks.ts), since they read file content too.
 */

/**
 * A gzip file is taken for a bomb once it expands past this many times its own size (and at
 * least GZIP_BOMB_FLOOR_BYTES): real data compresses 3 to 20 times, a bomb a thousand.
 */
export const GZIP_MAX_RATIO = 100;
export const GZIP_BOMB_FLOOR_BYTES = 1024 ** 3;

/** Thrown for a file that is not what its name says, with a sentence a buyer can read. */
export class UnreadableFileError extends Error {}

/** How many bytes a gzip file expands to, reading it once; refuses a bomb before it is all read. */
export async function checkGzipExpansion(file: string): Promise<number> {
  const { size } = await fs.stat(file);
  const limit = Math.max(GZIP_BOMB_FLOOR_BYTES, size * GZIP_MAX_RATIO);
  let expanded = 0;
  try {
    await pipeline(createReadStream(file, { highWaterMark: 1024 * 1024 }), createGunzip(), async (chunks) => {
      for await (const chunk of chunks) {
        expanded += (chunk as Buffer).length;
        if (expanded > limit) return; // stops reading: the pipeline ends here
      }
    });
  } catch (error) {
    // Stopping at the limit aborts the read: that is not the file's fault.
    if (expanded <= limit)
      throw new UnreadableFileError(`The file is not valid gzip data (${(error as Error).message}).`);
  }
  if (expanded > limit) {
    throw new UnreadableFileError(
      `The gzip data expands to more than ${formatBytes(limit)} (over ${GZIP_MAX_RATIO} times its size): it was not read further.`,
    );
  }
  return expanded;
}

/** How much of the start is looked at to tell text from binary. */
const SNIFF_BYTES = 64 * 1024;
const PARQUET_MAGIC = Buffer.from("PAR1");
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);

/**
 * Checks that the bytes are what the name says, before DuckDB reads them: an empty file, a Parquet
 * file without its PAR1 markers, or text that is really binary (a NUL byte, gzip or Parquet inside a
 * `.csv`) is refused with a reason. `emptyAllowed`: an empty file is a file without a record (a JSON
 * Lines part of a table, which takes the table's columns).
 */
export async function checkLooksLike(
  file: string,
  format: DataFormat,
  compression: Compression,
  { emptyAllowed = false }: { emptyAllowed?: boolean } = {},
): Promise<void> {
  const handle = await fs.open(file, "r");
  try {
    const { size } = await handle.stat();
    if (size === 0) {
      if (emptyAllowed) return;
      throw new UnreadableFileError("The file is empty.");
    }
    if (format === "parquet") {
      const head = Buffer.alloc(4);
      const tail = Buffer.alloc(4);
      await handle.read(head, 0, 4, 0);
      await handle.read(tail, 0, 4, Math.max(0, size - 4));
      if (size < 12 || !head.equals(PARQUET_MAGIC) || !tail.equals(PARQUET_MAGIC)) {
        throw new UnreadableFileError("The file is not a complete Parquet file (its PAR1 markers are missing).");
      }
      return;
    }
    const start = Buffer.alloc(Math.min(SNIFF_BYTES, size));
    await handle.read(start, 0, start.length, 0);
    if (compression === "gzip") {
      if (!start.subarray(0, 2).equals(GZIP_MAGIC))
        throw new UnreadableFileError("The file is named .gz but is not gzip data.");
      return; // its text is checked by DuckDB as it reads (checkGzipExpansion bounds how much)
    }
    if (start.subarray(0, 2).equals(GZIP_MAGIC)) {
      throw new UnreadableFileError(`The file is gzip-compressed data, not plain ${format.toUpperCase()} text.`);
    }
    if (start.subarray(0, 4).equals(PARQUET_MAGIC)) {
      throw new UnreadableFileError(`The file is Parquet data, not ${format.toUpperCase()} text.`);
    }
    if (start.includes(0)) {
      throw new UnreadableFileError(
        `The file holds binary data (a NUL byte near its start), not ${format.toUpperCase()} text.`,
      );
    }
  } finally {
    await handle.close();
  }
}
