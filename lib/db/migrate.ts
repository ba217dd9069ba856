import { createHash, randomUUID } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import pg from "pg";

/**
 * Applies prisma/migrations/<name>/migration.sql in name order, each in its own transaction,
 * and records them in `_prisma_migrations` exactly as Prisma Migrate does, so that
 * `prisma migrate deploy`/`status` agree with this runner wherever Prisma's engine is available.
 */

export const MIGRATIONS_DIR = path.resolve("prisma/migrations");

/** Prisma Migrate's own advisory lock key: this runner and `prisma migrate` exclude each other. */
const PRISMA_ADVISORY_LOCK_KEY = 72707369;

export type Migration = { name: string; sql: string; checksum: string };

export class MigrationError extends Error {}

/** Prisma's checksum: SHA-256 of the script, lower-case hex. */
export function migrationChecksum(sql: string): string {
  return createHash("sha256").update(sql).digest("hex");
}

/** Prisma accepts a checksum computed with either line ending, so a checkout with CRLF still matches. */
function checksumMatches(sql: string, checksum: string): boolean {
  const lf = sql.replace(/\r\n/g, "\n");
  return [sql, lf, lf.replace(/\n/g, "\r\n")].some((variant) => migrationChecksum(variant) === checksum);
}

export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await fs.readFile(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: migrationChecksum(sql) };
    }),
  );
}

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

type AppliedRow = { migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null };

export async function migrate(
  databaseUrl: string,
  options: { migrationsDir?: string; log?: (message: string) => void } = {},
): Promise<{ applied: string[] }> {
  const log = options.log ?? (() => {});
  const migrations = await readMigrations(options.migrationsDir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<AppliedRow>(
      `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at`,
    );
    const pending = pendingMigrations(migrations, rows);
    for (const migration of pending) {
      log(`Applying migration ${migration.name}`);
      await applyOne(client, migration);
    }
    return { applied: pending.map((migration) => migration.name) };
  } finally {
    // Closing the session releases the advisory lock even if unlocking is never reached.
    await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

function pendingMigrations(migrations: Migration[], rows: AppliedRow[]): Migration[] {
  const live = rows.filter((row) => row.rolled_back_at === null);
  const failed = live.find((row) => row.finished_at === null);
  if (failed) {
    throw new MigrationError(
      `Migration ${failed.migration_name} started but never finished (a failed \`prisma migrate deploy\`?). ` +
        `Repair the database, then mark it with \`prisma migrate resolve\`.`,
    );
  }
  const byName = new Map(migrations.map((migration) => [migration.name, migration]));
  for (const row of live) {
    const migration = byName.get(row.migration_name);
    if (!migration) {
      throw new MigrationError(
        `The database has migration ${row.migration_name}, which is not in prisma/migrations. Is this checkout older than the database?`,
      );
    }
    if (!checksumMatches(migration.sql, row.checksum)) {
      throw new MigrationError(
        `Migration ${row.migration_name} was changed after it was applied. Applied migrations must not be edited; add a new migration instead.`,
      );
    }
  }
  const applied = new Set(live.map((row) => row.migration_name));
  return migrations.filter((migration) => !applied.has(migration.name));
}

async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  await client.query("BEGIN");
  try {
    await client.query(migration.sql);
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, now(), 1)`,
      [randomUUID(), migration.checksum, migration.name],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw new MigrationError(`Migration ${migration.name} failed and was rolled back: ${(error as Error).message}`);
  }
}
