import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, MIGRATIONS_DIR } from "../../lib/db/migrate";
import { tableNameFor } from "../../lib/tables/names";
import { createEmptyDatabase, type TestDatabase } from "../helpers/database";

/**
 * The migration that brought tables (prisma/migrations/*_tables_versions) on a database holding
 * orders from before: every data file becomes version 1 of a snapshot table of its own, named
 * exactly as order:add-file names a new one (lib/tables/names.ts), a failed profile a failed
 * publication, a pending one a publication in processing; binary files stay tableless.
 */

const TABLES_MIGRATION = "20261125120000_tables_versions";
let database: TestDatabase;
let client: pg.Client;
let before: string;

beforeAll(async () => {
  database = await createEmptyDatabase("tables_migrate");
  before = await fs.mkdtemp(path.join(os.tmpdir(), "migrations-before-tables-"));
  for (const name of await fs.readdir(MIGRATIONS_DIR)) {
    if (name < TABLES_MIGRATION)
      await fs.cp(path.join(MIGRATIONS_DIR, name), path.join(before, name), { recursive: true });
  }
  await migrate(database.url, { migrationsDir: before });
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await database?.drop();
  if (before) await fs.rm(before, { recursive: true, force: true });
});

/** Names a seller's files really have, several with the same table name. */
const NAMES = [
  "products.csv",
  "Products.2026-11.csv.gz",
  "products_2.json",
  "2026 Sales Report.CSV",
  "ümlaut-Daten.tsv",
  ".hidden.jsonl",
  `${"x".repeat(70)}.parquet`,
  `${"x".repeat(70)}-again.csv`,
  "photo.jpg",
];

describe("existing files become tables", () => {
  it("names each data file's table as order:add-file would, and carries profiles into versions", async () => {
    const buyer = (
      await client.query<{ id: string }>(`INSERT INTO buyers (email) VALUES ('old@example.com') RETURNING id`)
    ).rows[0]!.id;
    const order = (
      await client.query<{ id: string }>(
        `INSERT INTO orders (buyer_id, name, status) VALUES ($1, 'Old', 'delivered') RETURNING id`,
        [buyer],
      )
    ).rows[0]!.id;
    const ids: Record<string, string> = {};
    for (const [i, name] of NAMES.entries()) {
      const format = name.endsWith(".jpg")
        ? "binary"
        : name.includes(".parquet")
          ? "parquet"
          : name.includes(".json")
            ? name.includes(".jsonl")
              ? "jsonl"
              : "json"
            : name.toLowerCase().includes(".tsv")
              ? "tsv"
              : "csv";
      // The first file profiled with its Parquet rendition; "2026 Sales" failed; the rest pending.
      const status = format === "binary" ? "none" : i === 0 ? "ready" : name.startsWith("2026") ? "failed" : "pending";
      ids[name] = (
        await client.query<{ id: string }>(
          `INSERT INTO order_files (order_id, name, size, content_type, sha256, storage_key, created_at, format, profile_status, rows, columns, profile_error)
           VALUES ($1, $2, 10, 'text/csv', repeat('a', 64), $3, now() + make_interval(secs => $4), $5, $6, $7, $8, $9) RETURNING id`,
          [
            order,
            name,
            i === 1 ? "s3://seller-bucket/exports/products.csv.gz" : `${order}/file-${i}`,
            i,
            format,
            status,
            status === "ready" ? 250 : null,
            status === "ready" ? JSON.stringify([{ name: "id", type: "BIGINT", nullable: false }]) : null,
            status === "failed" ? "A row has 3 values, the header 2." : null,
          ],
        )
      ).rows[0]!.id;
    }
    await client.query(
      `INSERT INTO file_renditions (file_id, format, status, storage_key, size, sha256) VALUES ($1, 'parquet', 'ready', 'x', 5, repeat('b', 64))`,
      [ids["products.csv"]],
    );

    await migrate(database.url);

    const taken = new Set<string>();
    const expected = NAMES.filter((name) => !name.endsWith(".jpg")).map((name) => {
      const table = tableNameFor(name, (candidate) => taken.has(candidate));
      taken.add(table);
      return [name, table];
    });
    const { rows } = await client.query<{
      name: string;
      table: string | null;
      status: string | null;
      version: number | null;
    }>(
      `SELECT f.name, t.name AS table, p.status, p.version
       FROM order_files f LEFT JOIN table_publications p ON p.id = f.publication_id LEFT JOIN order_tables t ON t.id = p.table_id
       ORDER BY f.created_at`,
    );
    expect(rows.filter((row) => row.table !== null).map((row) => [row.name, row.table])).toEqual(expected);
    expect(rows.find((row) => row.name === "photo.jpg")).toMatchObject({ table: null });
    expect(rows.map((row) => row.status)).toEqual([
      "ready",
      "processing",
      "processing",
      "failed",
      "processing",
      "processing",
      "processing",
      "processing",
      null,
    ]);
    const versions = await client.query(
      `SELECT t.name, t.current_version, v.version, v.rows, v.columns FROM order_tables t JOIN table_versions v ON v.table_id = t.id`,
    );
    expect(versions.rows).toEqual([
      {
        name: "products",
        current_version: 1,
        version: 1,
        rows: "250",
        columns: [{ name: "id", type: "BIGINT", nullable: false }],
      },
    ]);
    const failed = await client.query(`SELECT error FROM table_publications WHERE status = 'failed'`);
    expect(failed.rows[0].error).toBe(
      'Part "2026 Sales Report.CSV" could not be read: A row has 3 values, the header 2.',
    );
    const registered = await client.query(`SELECT name FROM order_files WHERE registered ORDER BY name`);
    expect(registered.rows.map((row) => row.name)).toEqual(["Products.2026-11.csv.gz"]);
  });
});
