import pg from "pg";
import { migrate } from "../../lib/db/migrate";
import { ensureDatabaseExists } from "./common";

/**
 * The large data set of the list and offset benchmarks: 10,000 buyers with 100 orders each, a
 * "deep" buyer with 20,000, one file row per order (no bytes: listing never reads them).
 * Set-based SQL, one statement per table, in one transaction, so a seed is either whole or absent.
 */

export const REGULAR_BUYERS = 10_000;
export const ORDERS_PER_BUYER = 100;
export const DEEP_ORDERS = 20_000;
export const TOTAL_ORDERS = REGULAR_BUYERS * ORDERS_PER_BUYER + DEEP_ORDERS;
export const DEEP_EMAIL = "bench-deep@example.com";
export const MARKER_EMAIL = "bench-0@example.com";
/** Seeded orders are named so; other benchmarks' orders never are. */
export const SEEDED_ORDER_PREFIX = "Bench dataset ";
/** Seeded files' storage keys start so (there are no bytes behind them). */
export const SEEDED_STORAGE_PREFIX = "bench-seed/";

/** bench-0 .. bench-9999 only (add-file-memory makes bench-<timestamp> buyers). */
const REGULAR_EMAIL_PATTERN = "^bench-[0-9]{1,4}@example\\.com$";

export type SeedResult = {
  database_created: boolean;
  skipped: boolean;
  seconds: number;
  steps: Record<string, number>;
  buyers: number;
  orders: number;
  order_files: number;
};

const YEAR_SECONDS = 365 * 24 * 60 * 60;

/**
 * Orders are inserted in paid_at order, all buyers interleaved, as a real table fills up over a
 * year: one buyer's orders sit on many heap pages, not side by side. Every tenth order of a
 * buyer (k % 10 = 1) has exactly the paid_at of the one before, so the id tiebreak matters.
 * Status by k % 10: 0-6 delivered, 7 and 9 unfinished, 8 refunded.
 */
const SEED_ORDERS = `
WITH regular_buyers AS (
  SELECT id, substring(email FROM '^bench-([0-9]+)@')::int AS n
  FROM buyers WHERE email ~ '${REGULAR_EMAIL_PATTERN}'
), planned AS (
  SELECT b.id AS buyer_id, g / ${REGULAR_BUYERS} AS k,
         'Bench dataset #' || g AS name,
         (CASE WHEN (g / ${REGULAR_BUYERS}) % 10 = 1 THEN g - ${REGULAR_BUYERS} ELSE g END)
           * (${YEAR_SECONDS}::numeric / ${REGULAR_BUYERS * ORDERS_PER_BUYER}) AS second
  FROM generate_series(0, ${REGULAR_BUYERS * ORDERS_PER_BUYER - 1}) AS g
  JOIN regular_buyers b ON b.n = g % ${REGULAR_BUYERS}
  UNION ALL
  SELECT d.id, j, 'Bench dataset deep #' || j,
         (CASE WHEN j % 10 = 1 THEN j - 1 ELSE j END) * (${YEAR_SECONDS}::numeric / ${DEEP_ORDERS})
  FROM generate_series(0, ${DEEP_ORDERS - 1}) AS j
  CROSS JOIN (SELECT id FROM buyers WHERE email = '${DEEP_EMAIL}') d
), timed AS (
  SELECT buyer_id, k, name,
         CASE k % 10 WHEN 7 THEN 'unfinished' WHEN 9 THEN 'unfinished' WHEN 8 THEN 'refunded' ELSE 'delivered' END
           ::order_status AS status,
         timestamptz '2025-01-01 00:00:00+00' + second * interval '1 second' AS paid_at
  FROM planned
)
INSERT INTO orders (buyer_id, name, status, paid_at, delivered_at, created_at, updated_at)
SELECT buyer_id, name, status, paid_at,
       CASE WHEN status = 'unfinished' THEN NULL ELSE paid_at + (2 + k % 5) * interval '1 hour' END,
       paid_at, paid_at
FROM timed
ORDER BY paid_at, name`;

/** One file row per seeded order, in the same (time) order; names and types vary. */
const SEED_FILES = `
INSERT INTO order_files (order_id, name, size, content_type, sha256, storage_key, created_at)
SELECT o.id,
       (ARRAY['products.csv', 'reviews.json', 'listings.parquet'])[1 + (hashtext(o.id) & 2147483647) % 3],
       1000 + (hashtext(o.id || 'size') & 2147483647) % 500000000,
       (ARRAY['text/csv', 'application/json', 'application/octet-stream'])[1 + (hashtext(o.id) & 2147483647) % 3],
       encode(sha256(convert_to(o.id, 'UTF8')), 'hex'),
       '${SEEDED_STORAGE_PREFIX}' || o.id,
       o.paid_at + interval '1 hour'
FROM orders o
WHERE o.name LIKE '${SEEDED_ORDER_PREFIX}%'
ORDER BY o.paid_at, o.id`;

async function counts(client: pg.Client) {
  const { rows } = await client.query<{ marker: boolean; orders: string; files: string; buyers: string }>(
    `SELECT EXISTS (SELECT 1 FROM buyers WHERE email = $1) AS marker,
            (SELECT count(*) FROM orders WHERE name LIKE $2) AS orders,
            (SELECT count(*) FROM order_files WHERE storage_key LIKE $3) AS files,
            (SELECT count(*) FROM buyers WHERE email ~ '${REGULAR_EMAIL_PATTERN}' OR email = $4) AS buyers`,
    [MARKER_EMAIL, `${SEEDED_ORDER_PREFIX}%`, `${SEEDED_STORAGE_PREFIX}%`, DEEP_EMAIL],
  );
  const row = rows[0]!;
  return { marker: row.marker, orders: Number(row.orders), files: Number(row.files), buyers: Number(row.buyers) };
}

/** Creates, migrates and seeds the bench database unless it is already seeded. */
export async function ensureSeeded(databaseUrl: string, log: (message: string) => void): Promise<SeedResult> {
  const started = performance.now();
  const databaseCreated = await ensureDatabaseExists(databaseUrl);
  const { applied } = await migrate(databaseUrl);
  if (applied.length) log(`applied migrations: ${applied.join(", ")}`);

  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const before = await counts(client);
    const complete =
      before.marker &&
      before.orders === TOTAL_ORDERS &&
      before.files === TOTAL_ORDERS &&
      before.buyers === REGULAR_BUYERS + 1;
    if (complete) {
      return {
        database_created: databaseCreated,
        skipped: true,
        seconds: (performance.now() - started) / 1000,
        steps: {},
        buyers: before.buyers,
        orders: before.orders,
        order_files: before.files,
      };
    }
    if (before.marker || before.orders > 0) {
      // Cannot happen after a clean run (the seed is one transaction); a half-changed data set is not reused.
      const { rows } = await client.query<{ others: string }>(
        `SELECT count(*) AS others FROM buyers WHERE email NOT LIKE 'bench-%'`,
      );
      if (Number(rows[0]!.others) > 0) {
        throw new Error(
          `${databaseUrl} holds an incomplete benchmark data set next to other buyers; drop that database and rerun.`,
        );
      }
      log("incomplete benchmark data set found: emptying the benchmark tables");
      await client.query("TRUNCATE buyers, orders, order_files, api_keys CASCADE");
    }

    log(`seeding ${REGULAR_BUYERS + 1} buyers, ${TOTAL_ORDERS} orders, ${TOTAL_ORDERS} file rows ...`);
    const steps: Record<string, number> = {};
    const step = async (name: string, sql: string) => {
      const t0 = performance.now();
      const result = await client.query(sql);
      steps[name] = Number(((performance.now() - t0) / 1000).toFixed(2));
      log(`  ${name}: ${result.rowCount ?? 0} rows in ${steps[name]} s`);
    };
    await client.query("BEGIN");
    try {
      // Bulk-load settings for this transaction only.
      await client.query("SET LOCAL synchronous_commit = off");
      await client.query("SET LOCAL work_mem = '256MB'");
      await client.query("SET LOCAL maintenance_work_mem = '512MB'");
      await step(
        "buyers",
        `INSERT INTO buyers (email, name, email_verified, created_at)
         SELECT 'bench-' || n || '@example.com', 'Bench buyer ' || n, timestamptz '2025-01-01 00:00:00+00',
                timestamptz '2025-01-01 00:00:00+00'
         FROM generate_series(0, ${REGULAR_BUYERS - 1}) AS n
         UNION ALL
         SELECT '${DEEP_EMAIL}', 'Bench deep buyer', timestamptz '2025-01-01 00:00:00+00',
                timestamptz '2025-01-01 00:00:00+00'`,
      );
      await step("orders", SEED_ORDERS);
      await step("order_files", SEED_FILES);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    }
    const t0 = performance.now();
    await client.query("ANALYZE buyers, orders, order_files, api_keys");
    steps.analyze = Number(((performance.now() - t0) / 1000).toFixed(2));
    // A fresh VACUUM sets the visibility map, as autovacuum eventually would on a live table.
    const t1 = performance.now();
    await client.query("VACUUM orders, order_files");
    steps.vacuum = Number(((performance.now() - t1) / 1000).toFixed(2));
    const after = await counts(client);
    return {
      database_created: databaseCreated,
      skipped: false,
      seconds: (performance.now() - started) / 1000,
      steps,
      buyers: after.buyers,
      orders: after.orders,
      order_files: after.files,
    };
  } finally {
    await client.end();
  }
}

/** Buyer ids of the seeded data set. */
export async function seededBuyers(
  pool: pg.Pool,
): Promise<{ regular: (count: number) => Promise<string[]>; deep: string }> {
  const { rows } = await pool.query<{ id: string }>(`SELECT id FROM buyers WHERE email = $1`, [DEEP_EMAIL]);
  if (!rows[0]) throw new Error("The bench database is not seeded: run `node --import tsx bench/seed-large.ts`.");
  return {
    deep: rows[0].id,
    regular: async (count) => {
      const result = await pool.query<{ id: string }>(
        `SELECT id FROM buyers WHERE email ~ '${REGULAR_EMAIL_PATTERN}' ORDER BY random() LIMIT $1`,
        [count],
      );
      return result.rows.map((row) => row.id);
    },
  };
}
