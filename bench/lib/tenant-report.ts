import { report, round } from "./common";
import { spread, type Spread } from "./interleaved";
import { ORDINARY_OK, type HostileFigures, type Tally } from "./tenant-clients";

/** Each account's kept subsets: how many, their recorded size and their bytes on disk. */
type SubsetStore = Record<string, { subsets: number; mb: number; disk_mb: number }>;

/** What bench:tenants measured in one phase, and in one round (a quiet and a loaded phase). */
type Latency = { p50: number; p99: number; n: number };
export type PhaseResult = {
  ordinary_statuses: Tally;
  rows_ms: Latency;
  sql_ms: Latency;
  subset_ms: Latency;
  order_read_ms: Latency;
  order_read_statuses: Tally;
  hostile?: HostileFigures;
  server_rss_over_idle_mb: number;
  server_own_rss_over_idle_mb: number;
  subset_store: SubsetStore;
  metrics: string[];
};
export type RoundResult = {
  quiet: PhaseResult;
  loaded: PhaseResult;
  /** The query engine's processes' CPU (CPU-seconds a second) 2 s after the last client left. */
  engine_cpu_2s_after_clients_left: number;
  drain: { seconds: number; drained: boolean };
  subset_store_after_drain: SubsetStore;
};

/** Answers an ordinary account should never get: every label but 200, 202 and 302. */
const failures = (tally: Tally) =>
  Object.entries(tally).reduce((sum, [label, count]) => sum + (ORDINARY_OK.has(label) ? 0 : count), 0);
const refusals = (tally: Tally) =>
  Object.entries(tally).reduce((sum, [label, count]) => sum + (label.startsWith("429") ? count : 0), 0);
/** Engine CPU below this, 2 s after every client left, is an idle engine (no query still running). */
const IDLE_ENGINE_CPU = 0.1;

type Figure = { name: string; per_round: number[]; goal: string; met: (value: number) => boolean };

/**
 * The figures per round and their median against Part 8's goals, as a table (printed) and JSON
 * (bench/results/tenants.json).
 */
export async function reportTenants(input: {
  settings: Record<string, unknown>;
  idle: { server_rss_mb: number; server_own_rss_mb: number };
  subsetQuotaBytes: number;
  rounds: RoundResult[];
}): Promise<void> {
  const { rounds } = input;
  const ratio = (pick: (phase: PhaseResult) => Latency) =>
    rounds.map((one) => round(pick(one.loaded).p99 / pick(one.quiet).p99, 2));
  const quotaMb = input.subsetQuotaBytes / 2 ** 20;
  const largestStore = (store: SubsetStore) =>
    Math.max(0, ...Object.values(store).map((account) => Math.max(account.mb, account.disk_mb)));
  const figures: Figure[] = [
    {
      name: "ordinary answers not 2xx/202/302",
      per_round: rounds.map((one) => failures(one.quiet.ordinary_statuses) + failures(one.loaded.ordinary_statuses)),
      goal: "0",
      met: (value) => value === 0,
    },
    {
      name: "  of them 429",
      per_round: rounds.map((one) => refusals(one.quiet.ordinary_statuses) + refusals(one.loaded.ordinary_statuses)),
      goal: "0",
      met: (value) => value === 0,
    },
    {
      name: "order reads not 2xx",
      per_round: rounds.map(
        (one) => failures(one.quiet.order_read_statuses) + failures(one.loaded.order_read_statuses),
      ),
      goal: "0",
      met: (value) => value === 0,
    },
    {
      name: "rows key lookup p99, loaded/quiet",
      per_round: ratio((phase) => phase.rows_ms),
      goal: "<= 3x",
      met: (v) => v <= 3,
    },
    {
      name: "sql GROUP BY p99, loaded/quiet",
      per_round: ratio((phase) => phase.sql_ms),
      goal: "<= 3x",
      met: (v) => v <= 3,
    },
    {
      name: "subset to 302 p99, loaded/quiet",
      per_round: ratio((phase) => phase.subset_ms),
      goal: "<= 3x",
      met: (v) => v <= 3,
    },
    {
      name: "order read p99, loaded/quiet",
      per_round: ratio((phase) => phase.order_read_ms),
      goal: "<= 2x",
      met: (v) => v <= 2,
    },
    {
      name: "server RSS over idle, MB (max)",
      per_round: rounds.map((one) => Math.max(one.quiet.server_rss_over_idle_mb, one.loaded.server_rss_over_idle_mb)),
      goal: "<= 1024",
      met: (value) => value <= 1024,
    },
    {
      name: "largest account's subsets, MB",
      per_round: rounds.map((one) =>
        Math.max(largestStore(one.loaded.subset_store), largestStore(one.subset_store_after_drain)),
      ),
      goal: `<= ${quotaMb}`,
      met: (value) => value <= quotaMb,
    },
    {
      name: "engine CPU 2 s after clients left",
      per_round: rounds.map((one) => one.engine_cpu_2s_after_clients_left),
      goal: `< ${IDLE_ENGINE_CPU}`,
      met: (value) => value < IDLE_ENGINE_CPU,
    },
  ];
  const withMedian = figures.map((figure) => {
    const summary: Spread = spread(figure.per_round);
    // The goal holds when every round meets it, not only the median.
    return { ...figure, median: summary.median, met_every_round: figure.per_round.every(figure.met) };
  });
  const header = ["figure", ...rounds.map((_, index) => `round ${index + 1}`), "median", "goal", "met"];
  const lines = [
    header,
    ...withMedian.map((figure) => [
      figure.name,
      ...figure.per_round.map(String),
      String(figure.median),
      figure.goal,
      figure.met_every_round ? "yes" : "NO",
    ]),
  ];
  const widths = header.map((_, column) => Math.max(...lines.map((line) => line[column]!.length)));
  const table = lines.map((line) => line.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")).join("\n");
  const latencies = rounds
    .map(
      (one, index) =>
        `round ${index + 1} p99 ms quiet -> loaded: rows ${one.quiet.rows_ms.p99} -> ${one.loaded.rows_ms.p99}, sql ${one.quiet.sql_ms.p99} -> ${one.loaded.sql_ms.p99}, ` +
        `subset ${one.quiet.subset_ms.p99} -> ${one.loaded.subset_ms.p99}, order read ${one.quiet.order_read_ms.p99} -> ${one.loaded.order_read_ms.p99}; ` +
        `drained ${one.drain.drained ? "in" : "NOT within"} ${one.drain.seconds} s`,
    )
    .join("\n");
  await report(
    "tenants",
    {
      ...input.settings,
      idle: input.idle,
      subset_quota_mb: quotaMb,
      figures: withMedian.map((figure) => ({
        name: figure.name,
        per_round: figure.per_round,
        median: figure.median,
        goal: figure.goal,
        met_every_round: figure.met_every_round,
      })),
      goals_met: withMedian.every((figure) => figure.met_every_round),
      per_round: rounds,
    },
    `bench:tenants, ${rounds.length} rounds (Part 8's goals):\n${table}\n${latencies}`,
  );
}
