import path from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";

/**
 * A 20-column table of `rows` rows sorted by its key `id`, written by DuckDB as `parts` Parquet
 * files under `dir` (part-01.parquet, ...; ids ascending across them): the table bench:explore
 * publishes. `bucket` is `id % 1000` (each value 0.1% of the rows, spread over every row group),
 * `category` one of 50. Returns the parts' paths in order.
 */
export async function writeWideTableParts(
  connection: DuckDBConnection,
  dir: string,
  rows: number,
  parts: number,
): Promise<string[]> {
  const columns = [
    "i AS id",
    "(i % 1000)::INTEGER AS bucket",
    "'c' || (i % 50) AS category",
    "(i % 10000) / 100.0 AS price",
    "(i % 500)::INTEGER AS quantity",
    "TIMESTAMP '2026-01-01' + to_seconds(i % 31536000) AS listed_at",
    "'SKU-' || i AS sku",
    "'Product ' || i || ', deluxe' AS name",
    "CASE WHEN i % 7 = 0 THEN NULL ELSE 'note ' || (i % 1000) END AS note",
    "(i * 7919 % 100000)::INTEGER AS stock",
    "(i % 3 = 0) AS featured",
    "DATE '2020-01-01' + (i % 2000)::INTEGER AS launched_on",
    "'brand-' || (i % 300) AS brand",
    "(i % 97) / 10.0 AS rating",
    "(i % 10000)::INTEGER AS reviews",
    "'FR-' || lpad(((i * 31) % 100000)::VARCHAR, 5, '0') AS postcode",
    "(i % 5000) / 3.0 AS weight",
    "'color-' || (i % 12) AS color",
    "(i % 24)::INTEGER AS warehouse",
    "md5(i::VARCHAR)[1:12] AS checksum",
  ];
  const files: string[] = [];
  const perPart = Math.ceil(rows / parts);
  for (let part = 0; part < parts; part++) {
    const first = part * perPart + 1;
    const last = Math.min(rows, first + perPart - 1);
    if (first > last) break;
    const file = path.join(dir, `part-${String(part + 1).padStart(2, "0")}.parquet`);
    await connection.run(
      `COPY (SELECT ${columns.join(", ")} FROM range(${first}, ${last + 1}) t(i) ORDER BY i)
       TO '${file}' (FORMAT parquet, COMPRESSION zstd)`,
    );
    files.push(file);
  }
  return files;
}
