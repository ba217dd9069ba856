import { benchDatabaseUrl, log, report, round } from "./lib/common";
import { ensureSeeded, TOTAL_ORDERS } from "./lib/seed";

/**
 * Creates (if needed), migrates and seeds the benchmark database (BENCH_DATABASE_URL, default
 * `dataset_access_bench` on DATABASE_URL's server): 10,001 buyers, 1,020,000 orders, one file
 * row each. Skips the work when the data set is already there.
 */
const databaseUrl = benchDatabaseUrl();
log(`bench database: ${new URL(databaseUrl).pathname.slice(1)}`);
const result = await ensureSeeded(databaseUrl, log);
const rowsPerSecond = result.skipped ? null : Math.round((result.orders + result.order_files) / result.seconds);
await report(
  "seed-large",
  { ...result, seconds: round(result.seconds), rows_per_second: rowsPerSecond },
  result.skipped
    ? `seed-large: already seeded (${result.orders} orders), checked in ${round(result.seconds)} s`
    : `seed-large: ${result.buyers} buyers, ${result.orders} orders, ${result.order_files} file rows in ${round(result.seconds, 1)} s ` +
        `(${rowsPerSecond} order+file rows/s; expected ${TOTAL_ORDERS} orders)`,
);
