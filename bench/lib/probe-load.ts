import { percentile, round } from "./common";

/**
 * The probe of bench:explore's load phases: one client sending `GET /api/health` and an order read
 * in turn, one at a time, for `seconds`; the p50 and p99 of each in milliseconds.
 */
export type ProbeFigures = {
  health: { p50: number; p99: number; n: number };
  order: { p50: number; p99: number; n: number };
};

export async function probe(url: string, orderPath: string, key: string, seconds: number): Promise<ProbeFigures> {
  const times = { health: [] as number[], order: [] as number[] };
  const deadline = Date.now() + seconds * 1000;
  const timedGet = async (target: string, headers: Record<string, string>): Promise<number> => {
    const started = performance.now();
    const response = await fetch(target, { headers });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${target}: HTTP ${response.status}`);
    return performance.now() - started;
  };
  while (Date.now() < deadline) {
    times.health.push(await timedGet(`${url}/api/health`, {}));
    times.order.push(await timedGet(`${url}${orderPath}`, { Authorization: `Bearer ${key}` }));
  }
  return { health: latencyFigures(times.health), order: latencyFigures(times.order) };
}

/** Nearest-rank p50 and p99 of latencies in ms, and how many. */
export function latencyFigures(values: number[]): { p50: number; p99: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 50), 1), p99: round(percentile(sorted, 99), 1), n: sorted.length };
}

/**
 * Buyers each querying their own order as fast as answers come until `stop` resolves: the `paths`
 * in turn (rows with a filter, SQL GROUP BY). Returns the answers counted by status.
 */
export async function buyersQuerying(
  url: string,
  buyers: { key: string; paths: string[] }[],
  stop: Promise<void>,
): Promise<Record<string, number>> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  const statuses: Record<string, number> = {};
  await Promise.all(
    buyers.map(async (buyer) => {
      for (let turn = 0; !stopped; turn++) {
        const response = await fetch(url + buyer.paths[turn % buyer.paths.length]!, {
          headers: { Authorization: `Bearer ${buyer.key}` },
        }).catch(() => undefined);
        const label = response ? String(response.status) : "network error";
        await response?.arrayBuffer();
        statuses[label] = (statuses[label] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}
