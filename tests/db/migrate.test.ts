import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { migrate, MigrationError, readMigrations } from "../../lib/db/migrate";
import { createEmptyDatabase, type TestDatabase } from "../helpers/database";

const databases: TestDatabase[] = [];
const tempDirs: string[] = [];
afterEach(async () => {
  await Promise.all(databases.splice(0).map((database) => database.drop()));
  await Promise.all(tempDirs.splice(0).map((dir) => fs.rm(dir, { recursive: true, force: true })));
});

async function emptyDatabase(): Promise<TestDatabase> {
  const database = await createEmptyDatabase("migrate");
  databases.push(database);
  return database;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A migrations directory of its own, for histories the project does not have. */
async function migrationsDir(scripts: Record<string, string>): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "migrations-"));
  tempDirs.push(dir);
  for (const [name, sql] of Object.entries(scripts)) {
    await fs.mkdir(path.join(dir, name));
    await fs.writeFile(path.join(dir, name, "migration.sql"), sql);
  }
  return dir;
}

type MigrationRow = { migration_name: string; checksum: string; finished_at: Date | null; applied_steps_count: number };
const appliedRows = (url: string) =>
  query<MigrationRow>(
    url,
    `SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name`,
  );

describe("the migration runner", () => {
  it("applies every migration once and records Prisma-compatible rows", async () => {
    const database = await emptyDatabase();
    const migrations = await readMigrations();
    expect(migrations.length).toBeGreaterThan(0);

    expect((await migrate(database.url)).applied).toEqual(migrations.map((migration) => migration.name));
    expect((await migrate(database.url)).applied).toEqual([]);

    const rows = await appliedRows(database.url);
    for (const [index, migration] of migrations.entries()) {
      const fileBytes = await fs.readFile(path.join("prisma/migrations", migration.name, "migration.sql"));
      expect(rows[index]).toMatchObject({
        migration_name: migration.name,
        checksum: createHash("sha256").update(fileBytes).digest("hex"),
        applied_steps_count: 1,
      });
      expect(rows[index]?.finished_at).toBeInstanceOf(Date);
    }
  });

  it("creates _prisma_migrations with Prisma's own columns", async () => {
    const database = await emptyDatabase();
    await migrate(database.url);
    const columns = await query<{ column_name: string; data_type: string; is_nullable: string }>(
      database.url,
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns
        WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    expect(columns.map((column) => [column.column_name, column.data_type, column.is_nullable])).toEqual([
      ["id", "character varying", "NO"],
      ["checksum", "character varying", "NO"],
      ["finished_at", "timestamp with time zone", "YES"],
      ["migration_name", "character varying", "NO"],
      ["logs", "text", "YES"],
      ["rolled_back_at", "timestamp with time zone", "YES"],
      ["started_at", "timestamp with time zone", "NO"],
      ["applied_steps_count", "integer", "NO"],
    ]);
  });

  it("lets instances that start at once apply each migration exactly once", async () => {
    const database = await emptyDatabase();
    const results = await Promise.all(Array.from({ length: 4 }, () => migrate(database.url)));
    const migrations = await readMigrations();
    expect(results.flatMap((result) => result.applied).sort()).toEqual(migrations.map((m) => m.name).sort());
    expect(await appliedRows(database.url)).toHaveLength(migrations.length);
  });

  it("rolls back a failing migration whole and records nothing for it", async () => {
    const database = await emptyDatabase();
    const dir = await migrationsDir({
      "001_good": "CREATE TABLE kept (id int);",
      "002_bad": "CREATE TABLE half_done (id int);\nSELECT 1 / 0;",
    });
    await expect(migrate(database.url, { migrationsDir: dir })).rejects.toThrow(
      /Migration 002_bad failed and was rolled back: division by zero/,
    );
    const tables = await query<{ table_name: string }>(
      database.url,
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
    );
    expect(tables.map((table) => table.table_name)).toEqual(["_prisma_migrations", "kept"]);
    expect((await appliedRows(database.url)).map((row) => row.migration_name)).toEqual(["001_good"]);
  });

  it("refuses to run when an applied migration was edited", async () => {
    const database = await emptyDatabase();
    const dir = await migrationsDir({ "001_first": "CREATE TABLE first (id int);" });
    await migrate(database.url, { migrationsDir: dir });
    await fs.writeFile(path.join(dir, "001_first", "migration.sql"), "CREATE TABLE first (id bigint);");
    await expect(migrate(database.url, { migrationsDir: dir })).rejects.toThrow(MigrationError);
    await expect(migrate(database.url, { migrationsDir: dir })).rejects.toThrow(
      /001_first was changed after it was applied/,
    );
  });

  it("accepts a checkout whose line endings differ from the applied script", async () => {
    const database = await emptyDatabase();
    const dir = await migrationsDir({ "001_first": "CREATE TABLE first (id int);\nCREATE TABLE second (id int);\n" });
    await migrate(database.url, { migrationsDir: dir });
    await fs.writeFile(
      path.join(dir, "001_first", "migration.sql"),
      "CREATE TABLE first (id int);\r\nCREATE TABLE second (id int);\r\n",
    );
    expect((await migrate(database.url, { migrationsDir: dir })).applied).toEqual([]);
  });

  it("refuses a database that has a migration this checkout does not know", async () => {
    const database = await emptyDatabase();
    await migrate(database.url, { migrationsDir: await migrationsDir({ "001_a": "SELECT 1;", "002_b": "SELECT 1;" }) });
    await expect(
      migrate(database.url, { migrationsDir: await migrationsDir({ "001_a": "SELECT 1;" }) }),
    ).rejects.toThrow(/has migration 002_b, which is not in prisma\/migrations/);
  });
});
