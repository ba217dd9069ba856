import { promises as fs } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { DuckDBInstance } from "@duckdb/node-api";
import { db } from "../../lib/db/client";
import { waitFor } from "../helpers/wait";

/**
 * Real data files of every format for the dataset tests, made here: the same 250 rows of products
 * as CSV, TSV, a JSON array, JSON Lines, gzipped CSV and Parquet (written by DuckDB itself), and the
 * bad input a seller's pipeline can produce.
 */

export const PRODUCT_ROWS = 250;
export const PRODUCT_COLUMNS = ["id", "name", "price", "listed_at", "note"];

function products(): { id: number; name: string; price: number; listed_at: string; note: string | null }[] {
  return Array.from({ length: PRODUCT_ROWS }, (_, i) => ({
    id: i + 1,
    name: `Product ${i + 1}, "deluxe"`,
    price: Math.round((i + 1) * 1.25 * 100) / 100,
    listed_at: `2026-10-${String((i % 28) + 1).padStart(2, "0")} 08:00:00`,
    note: i % 10 === 0 ? null : `note ${i}`,
  }));
}

const csvField = (value: unknown) =>
  value === null ? "" : /[",\n]/.test(String(value)) ? `"${String(value).replaceAll('"', '""')}"` : String(value);

export function productsCsv(delimiter = ","): string {
  const rows = products().map((row) => Object.values(row).map(csvField).join(delimiter));
  return `${PRODUCT_COLUMNS.join(delimiter)}\n${rows.join("\n")}\n`;
}

export const productsJson = () => JSON.stringify(products());
export const productsJsonl = () =>
  `${products()
    .map((row) => JSON.stringify(row))
    .join("\n")}\n`;

/** The products as Parquet, written by DuckDB from the CSV. */
export async function productsParquet(workDir: string): Promise<Buffer> {
  const csv = path.join(workDir, "products-source.csv");
  const parquet = path.join(workDir, "products.parquet");
  await fs.writeFile(csv, productsCsv());
  const connection = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    await connection.run(`COPY (SELECT * FROM read_csv('${csv}')) TO '${parquet}' (FORMAT parquet)`);
  } finally {
    connection.closeSync();
  }
  return fs.readFile(parquet);
}

/** Every format, with the same products inside. */
export async function goodFiles(workDir: string): Promise<Record<string, Buffer>> {
  return {
    "products.csv": Buffer.from(productsCsv()),
    "products.tsv": Buffer.from(productsCsv("\t")),
    "products.json": Buffer.from(productsJson()),
    "products.jsonl": Buffer.from(productsJsonl()),
    "products.csv.gz": gzipSync(productsCsv()),
    "products.parquet": await productsParquet(workDir),
  };
}

/** A gzip file of `members` copies of 100 MiB of zeros: a few hundred KiB that expands to members × 100 MiB. */
export function gzipBomb(members: number): Buffer {
  const member = gzipSync(Buffer.alloc(100 * 1024 * 1024), { level: 9 });
  return Buffer.concat(Array.from({ length: members }, () => member));
}

/** Files that are not what their names say, or not readable data, each with the reason expected. */
export async function badFiles(workDir: string): Promise<Record<string, { content: Buffer; reason: RegExp }>> {
  const parquet = await productsParquet(workDir);
  const corruptFooter = Buffer.from(parquet);
  corruptFooter.fill(0x55, corruptFooter.length - 40, corruptFooter.length - 4); // the footer, not the PAR1 marker
  return {
    "ragged.csv": { content: Buffer.from("a,b\n1,2\n3,4,5\n6\n"), reason: /could not be read as CSV/ },
    "latin1.csv": {
      content: Buffer.concat([
        Buffer.from("name,city\nJosé,"),
        Buffer.from([0x4d, 0xfc, 0x6e, 0x63, 0x68, 0x65, 0x6e, 0x0a]),
      ]),
      reason: /not utf-8|unicode/i,
    },
    "nul.csv": { content: Buffer.from("a,b\n1,\u00002\n"), reason: /binary data \(a NUL byte/ },
    "empty.csv": { content: Buffer.alloc(0), reason: /^The file is empty\.$/ },
    "cut-short.json": { content: Buffer.from('[{"a": 1}, {"a": 2'), reason: /could not be read as JSON/ },
    "footer.parquet": { content: corruptFooter, reason: /could not be read as Parquet/ },
    "truncated.parquet": { content: parquet.subarray(0, parquet.length - 100), reason: /PAR1 markers are missing/ },
    "binary.csv": { content: gzipSync(Buffer.from("not,text\n")), reason: /gzip-compressed data, not plain CSV/ },
    "random.jsonl": { content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]), reason: /binary data/ },
    "long-line.csv": {
      content: Buffer.concat([Buffer.from("header\n"), Buffer.alloc(8 * 1024 * 1024, "a")]),
      reason: /A line of the file is longer than 2 MB/,
    },
    // About 10 MB that expands to 10.5 GB: refused at 1 GiB.
    "bomb.csv.gz": { content: gzipBomb(100), reason: /expands to more than 1\.1 GB/ },
  };
}

/** One JSON array of `count` objects (tens of MB): read element by element, memory flat. */
export function bigJsonArray(count: number): Buffer {
  const parts = ["["];
  for (let i = 0; i < count; i++) parts.push(`${i ? "," : ""}{"id":${i},"text":"row ${i} of a big array"}`);
  parts.push("]");
  return Buffer.from(parts.join(""));
}

/**
 * Waits until the server's job worker has profiled every data file and made every rendition asked
 * for (watched in the database: polling the API would meet its 60/minute limit).
 */
export async function datasetJobsDone(withinMs = 240_000): Promise<void> {
  await waitFor(
    async () =>
      (await db().orderFile.count({ where: { profileStatus: "pending" } })) === 0 &&
      (await db().fileRendition.count({ where: { status: "pending" } })) === 0 &&
      (await db().tablePublication.count({ where: { status: "processing" } })) === 0,
    withinMs,
    "every file profiled, its renditions made and every publication processed",
  );
}

/** A Parquet file's column names and row count, as DuckDB reads it from its path. */
export async function readParquetFile(file: string): Promise<{ columns: string[]; rows: number }> {
  const connection = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
    const counted = await connection.runAndReadAll(`SELECT count(*) FROM read_parquet('${file}')`);
    return {
      columns: described.getRowObjectsJson().map((row) => String(row.column_name)),
      rows: Number(counted.getRowsJson()[0]![0]),
    };
  } finally {
    connection.closeSync();
  }
}

/** An order's worth of files for the clients' --format tests: CSV, JSON, Parquet, a binary and an unreadable CSV. */
export async function mixedFiles(workDir: string): Promise<Record<string, Buffer>> {
  return {
    "products.csv": Buffer.from(productsCsv()),
    "listings.json": Buffer.from(productsJson()),
    "catalog.parquet": await productsParquet(workDir),
    "archive.bin": Buffer.from([0, 1, 2, 3]),
    "ragged.csv": (await badFiles(workDir))["ragged.csv"]!.content,
  };
}
