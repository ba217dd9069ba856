import { median, round } from "./common";

/**
 * Figures that hold from run to run: a ratio is measured `rounds` times with the subject and its
 * baseline interleaved (baseline, subject, baseline, subject, ...), so a slow minute on a shared
 * machine hits both sides, and reported as the median with its spread (min–max).
 */
export type Spread = { median: number; min: number; max: number; runs: number[] };

/** The median and range of `values`, rounded. */
export function spread(values: number[], digits = 2): Spread {
  return {
    median: round(median(values), digits),
    min: round(Math.min(...values), digits),
    max: round(Math.max(...values), digits),
    runs: values.map((value) => round(value, digits)),
  };
}

/** "0.91x (0.88–0.95, 3 runs)": how the README and the summaries print a ratio. */
export function formatSpread(figure: Spread, unit = "x"): string {
  return `${figure.median}${unit} (${figure.min}–${figure.max}${unit}, ${figure.runs.length} runs)`;
}

/**
 * Runs `baseline` then `subject`, `rounds` times (at least 3), and returns every pair in order. The
 * caller turns pairs into ratios (per pair, so each ratio compares neighbours in time) and spreads.
 */
export async function interleaved<B, S>(
  rounds: number,
  baseline: (round: number) => Promise<B>,
  subject: (round: number) => Promise<S>,
): Promise<{ baseline: B; subject: S }[]> {
  if (!Number.isInteger(rounds) || rounds < 3)
    throw new Error(`interleaved runs need at least 3 rounds (got ${rounds})`);
  const pairs: { baseline: B; subject: S }[] = [];
  for (let round = 0; round < rounds; round++) {
    pairs.push({ baseline: await baseline(round), subject: await subject(round) });
  }
  return pairs;
}

/** BENCH_ROUNDS (default 3, at least 3): how many interleaved rounds a benchmark runs. */
export function benchRounds(): number {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  if (!Number.isInteger(rounds) || rounds < 3)
    throw new Error(`BENCH_ROUNDS must be an integer >= 3 (got ${process.env.BENCH_ROUNDS})`);
  return rounds;
}
