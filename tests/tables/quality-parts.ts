import { promises as fs } from "node:fs";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

/** A generated row of a quality test's table: id, name, price, and any extra columns. */
export type Row = Record<string, string | number | null>;

const DEFAULT_TYPES: Record<string, string> = { id: "BIGINT", name: "VARCHAR", price: "DOUBLE" };
let counter = 0;

/**
 * Writes `rows` as one Parquet part with fixed column types (id BIGINT, name VARCHAR, price DOUBLE,
 * others as `types` say, VARCHAR by default), so that 0 rows or a column of only nulls keep the
 * table's types, as a scraper writing Parquet would.
 */
export async function parquetPart(dir: string, rows: Row[], types: Record<string, string> = {}): Promise<string> {
  const names = Object.keys(rows[0] ?? DEFAULT_TYPES);
  const typeOf = (name: string) => types[name] ?? DEFAULT_TYPES[name] ?? "VARCHAR";
  const n = ++counter;
  const json = path.join(dir, `rows-${n}.jsonl`);
  const target = path.join(dir, `part-${n}.parquet`);
  // An empty part is written from one placeholder row, filtered out.
  const written = rows.length ? rows : [Object.fromEntries(names.map((name) => [name, null]))];
  await fs.writeFile(json, written.map((row) => JSON.stringify(row)).join("\n") + "\n");
  const columns = names.map((name) => `'${name}': '${typeOf(name)}'`).join(", ");
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    await connection.run(
      `COPY (SELECT * FROM read_json('${json}', columns = {${columns}}) ${rows.length ? "" : "WHERE false"})
       TO '${target}' (FORMAT parquet)`,
    );
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  return target;
}
