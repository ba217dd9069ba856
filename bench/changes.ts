import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { datasetEngineSettings } from "../lib/engine/engine";
import { closeEnginePool, runEngineTask } from "../lib/engine/engine-pool";
import { benchRounds, spread } from "./lib/interleaved";
import { commandLine, descendants, log, report, round, sampler, treeRssKb } from "./lib/common";

/**
 * The change file of a version pair (contract Part 4, lib/engine/change-feed.ts) against the best
 * diff written by hand in DuckDB over the same two Parquet files, from this same process, interleaved
 * (hand, ours, hand, ours...; BENCH_ROUNDS rounds), each side with the engine's memory limit and
 * threads:
 * - keyed: BENCH_CHANGE_ROWS rows per version (default 10 million, about 1 GB of CSV), 1% updated,
 *   0.5% deleted, 0.5% inserted; hand: one FULL OUTER JOIN on the key writing Parquet; ours: the
 *   engine task `changeFile` (the diff with pre- and post-images, its counts and its profile) in an
 *   engine process. The counts must be exact.
 * - keyless: the same rows compared whole; hand: `EXCEPT ALL` both ways writing Parquet.
 * - the engine process's peak resident memory over its idle memory.
 */
const rows = Number(process.env.BENCH_CHANGE_ROWS ?? 10_000_000);
const rounds = benchRounds();
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-changes-"));
process.env.DATASET_TEMP_DIR = path.join(workDir, "engine");
const { memoryLimit, threads } = datasetEngineSettings();

async function withDuckDB<T>(work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(":memory:", {
    memory_limit: memoryLimit,
    threads: String(threads),
    temp_directory: path.join(workDir, "hand-spill"),
  });
  const connection = await instance.connect();
  try {
    return await work(connection);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

// Two versions of a products table: every 200th row deleted, every 100th (of the rest) repriced, 0.5% new rows.
const previous = path.join(workDir, "previous.parquet");
const current = path.join(workDir, "current.parquet");
log(`writing two versions of ${rows} rows`);
await withDuckDB(async (connection) => {
  const row = (id: string) =>
    `${id} AS id, 'SKU-' || ${id} AS sku, (${id} % 10000) / 100.0 AS price, (${id} % 500)::INTEGER AS quantity, ` +
    `CASE WHEN ${id} % 7 = 0 THEN NULL ELSE 'note ' || (${id} % 1000) END AS note`;
  await connection.run(
    `COPY (SELECT ${row("i")} FROM range(1, ${rows + 1}) t(i)) TO '${previous}' (FORMAT parquet, COMPRESSION zstd)`,
  );
  await connection.run(
    `COPY (
       SELECT id, sku, CASE WHEN id % 100 = 1 THEN price + 1 ELSE price END AS price, quantity, note
       FROM (SELECT ${row("i")} FROM range(1, ${rows + 1}) t(i)) WHERE id % 200 <> 0
       UNION ALL SELECT ${row("i")} FROM range(${rows + 1}, ${rows + 1 + rows / 200}) t(i)
     ) TO '${current}' (FORMAT parquet, COMPRESSION zstd)`,
  );
});
const expected = {
  inserted: rows / 200,
  deleted: Math.floor(rows / 200),
  // id % 100 = 1 is never id % 200 = 0: every such row is kept and repriced.
  updated: Math.floor((rows - 1) / 100) + 1,
};

const columns = ["id", "sku", "price", "quantity", "note"];
const valueColumns = columns.filter((column) => column !== "id");

const hand = {
  keyed: () =>
    withDuckDB((connection) =>
      connection.run(`COPY (
        SELECT ${columns.map((column) => `o.${column} AS o_${column}, n.${column} AS n_${column}`).join(", ")}
        FROM read_parquet('${previous}') o FULL OUTER JOIN read_parquet('${current}') n ON o.id = n.id
        WHERE o.id IS NULL OR n.id IS NULL OR ${valueColumns.map((column) => `o.${column} IS DISTINCT FROM n.${column}`).join(" OR ")}
      ) TO '${path.join(workDir, "hand-keyed.parquet")}' (FORMAT parquet, COMPRESSION zstd)`),
    ),
  keyless: () =>
    withDuckDB((connection) =>
      connection.run(`COPY (
        SELECT *, 'insert' AS change FROM (SELECT * FROM read_parquet('${current}') EXCEPT ALL SELECT * FROM read_parquet('${previous}'))
        UNION ALL
        SELECT *, 'delete' FROM (SELECT * FROM read_parquet('${previous}') EXCEPT ALL SELECT * FROM read_parquet('${current}'))
      ) TO '${path.join(workDir, "hand-keyless.parquet")}' (FORMAT parquet, COMPRESSION zstd)`),
    ),
};

const engineDir = path.join(workDir, "task");
await fs.mkdir(engineDir, { recursive: true, mode: 0o700 });
const ours = (key: string[]) => () =>
  runEngineTask(
    "changeFile",
    {
      current: [current],
      previous: [previous],
      columnNames: columns,
      previousColumns: columns,
      key,
      target: path.join(engineDir, `ours-${key.length ? "keyed" : "keyless"}.parquet`),
    },
    { directory: engineDir, readable: [current, previous] },
  );

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { seconds: (performance.now() - started) / 1000, value };
}

// The engine process starts on a first small task, so its idle memory can be read.
await runEngineTask(
  "profile",
  { file: previous, format: "parquet", compression: null },
  { directory: engineDir, readable: [previous] },
);
const enginePid = descendants(process.pid).find((pid) => commandLine(pid).includes("engine-child"))!;
const idleMb = treeRssKb(enginePid) / 1024;
const engineRss = sampler(() => treeRssKb(enginePid) / 1024, 100);

const seconds = {
  hand_keyed: [] as number[],
  ours_keyed: [] as number[],
  hand_keyless: [] as number[],
  ours_keyless: [] as number[],
};
let counts: { keyed?: unknown; keyless?: unknown } = {};
for (let r = 1; r <= rounds; r++) {
  seconds.hand_keyed.push((await timed(hand.keyed)).seconds);
  const keyed = await timed(ours(["id"]));
  seconds.ours_keyed.push(keyed.seconds);
  seconds.hand_keyless.push((await timed(hand.keyless)).seconds);
  const keyless = await timed(ours([]));
  seconds.ours_keyless.push(keyless.seconds);
  counts = { keyed: keyed.value.counts, keyless: keyless.value.counts };
  log(
    `round ${r}: keyed hand ${round(seconds.hand_keyed.at(-1)!)} s, ours ${round(keyed.seconds)} s; ` +
      `keyless hand ${round(seconds.hand_keyless.at(-1)!)} s, ours ${round(keyless.seconds)} s`,
  );
}
const peakMb = Math.max(...engineRss.stop());
await closeEnginePool();

const keyedCounts = counts.keyed as Record<string, number>;
const exact =
  keyedCounts.insert === expected.inserted &&
  keyedCounts.delete === expected.deleted &&
  keyedCounts.update_postimage === expected.updated &&
  keyedCounts.update_preimage === expected.updated;
const speed = (baseline: number[], measured: number[]) => spread(baseline.map((value, i) => value / measured[i]!));
const keyedSpeed = speed(seconds.hand_keyed, seconds.ours_keyed);
const keylessSpeed = speed(seconds.hand_keyless, seconds.ours_keyless);
await report(
  "changes",
  {
    rows_per_version: rows,
    rounds,
    memory_limit: memoryLimit,
    threads,
    expected,
    counts,
    exact,
    seconds,
    keyed_speed_vs_hand: keyedSpeed,
    keyless_speed_vs_hand: keylessSpeed,
    engine_rss_mb: { idle: round(idleMb), peak: round(peakMb), growth: round(peakMb - idleMb) },
  },
  `change file of ${rows.toLocaleString("en")} rows a version: counts ${exact ? "exact" : "WRONG"}; keyed ${keyedSpeed.median}x the speed ` +
    `of a hand-written FULL OUTER JOIN (${keyedSpeed.min}-${keyedSpeed.max}), keyless ${keylessSpeed.median}x of EXCEPT ALL ` +
    `(${keylessSpeed.min}-${keylessSpeed.max}); engine process +${round(peakMb - idleMb)} MB over idle (${round(idleMb)} MB)`,
);
await fs.rm(workDir, { recursive: true, force: true });
if (!exact) process.exitCode = 1;
