import { sleep } from "./common";
import { slowRead } from "./slow-reader";

/**
 * The clients of bench:tenants (contract Part 8's proof): ordinary accounts in closed loops, an order
 * reader, and one hostile account at 60 requests a minute of the worst work a buyer may ask for. Every
 * loop is bounded in time (the phase's end, then a grace for answers in flight) and in count.
 */

/** Answers counted by label: the status, and for a refusal its problem code (`429 too_many_queries`). */
export type Tally = Record<string, number>;

/** One phase: loops start nothing after `until`; `hardStop` aborts whatever is still waiting. */
export type Phase = { url: string; until: number; hardStop: AbortSignal };

/** The most any loop does in a phase, whatever the pace: a bound on a loop that would otherwise spin. */
const MAX_TURNS = 100_000;

const add = (tally: Tally, label: string) => (tally[label] = (tally[label] ?? 0) + 1);

/** The status, with the problem's code for an error (an admission refusal and a rate limit differ). */
async function labelOf(response: Response): Promise<string> {
  if (response.status < 400) {
    await response.arrayBuffer();
    return String(response.status);
  }
  const text = await response.text();
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === "string" ? `${response.status} ${code}` : String(response.status);
  } catch {
    return String(response.status);
  }
}

/** What a failed request is counted as: the client's own timeout, the phase's end, or the network. */
function failureOf(error: unknown): string {
  const name = (error as { name?: string }).name;
  return name === "TimeoutError" ? "client timeout" : name === "AbortError" ? "aborted at phase end" : "network error";
}

type Answer = { label: string; ok: boolean; ms: number };

async function timedGet(target: string, key: string, signal: AbortSignal): Promise<Answer> {
  const started = performance.now();
  try {
    const response = await fetch(target, { headers: { Authorization: `Bearer ${key}` }, redirect: "manual", signal });
    const label = await labelOf(response);
    return { label, ok: response.status < 400, ms: performance.now() - started };
  } catch (error) {
    return { label: failureOf(error), ok: false, ms: performance.now() - started };
  }
}

/** Statuses an ordinary account may get (Part 8's goal); anything else is counted as a failure. */
export const ORDINARY_OK = new Set(["200", "202", "302"]);

export type OrdinaryFigures = { statuses: Tally; ms: { rows: number[]; sql: number[]; subset: number[] } };

export type OrdinaryAccount = {
  key: string;
  orderId: string;
  /** A key lookup, a small GROUP BY, a new small subset (its `seq` makes every one a new request). */
  rowsPath: (call: number) => string;
  sqlPath: string;
  subsetPath: (seq: number) => string;
};

/** How long an ordinary request may take before the client gives up (counted as `client timeout`). */
const ORDINARY_TIMEOUT_MS = 60_000;
const SUBSET_POLL_MS = 500;

/**
 * One ordinary account in a closed loop: a key lookup on /rows, a GROUP BY on /sql, a small subset
 * (asked, then asked again every SUBSET_POLL_MS until its 302), in turn, a new one at most every `paceMs`
 * (the pace a buyer inside 60 a minute keeps) and only after the last is answered. Latencies of answers
 * only; every answer's label counted. `nextSeq` hands out subset numbers unique across the run.
 */
export async function ordinaryLoop(
  phase: Phase,
  account: OrdinaryAccount,
  paceMs: number,
  nextSeq: () => number,
): Promise<OrdinaryFigures> {
  const figures: OrdinaryFigures = { statuses: {}, ms: { rows: [], sql: [], subset: [] } };
  const signal = () => AbortSignal.any([phase.hardStop, AbortSignal.timeout(ORDINARY_TIMEOUT_MS)]);
  const get = async (target: string) => {
    const answer = await timedGet(phase.url + target, account.key, signal());
    add(figures.statuses, answer.label);
    return answer;
  };
  for (let turn = 0; turn < MAX_TURNS && Date.now() < phase.until; turn++) {
    const started = Date.now();
    const kind = (["rows", "sql", "subset"] as const)[turn % 3]!;
    if (kind === "rows" || kind === "sql") {
      const answer = await get(kind === "rows" ? account.rowsPath(turn) : account.sqlPath);
      if (answer.ok) figures.ms[kind].push(answer.ms);
    } else {
      const target = account.subsetPath(nextSeq());
      const asked = performance.now();
      for (let poll = 0; poll < ORDINARY_TIMEOUT_MS / SUBSET_POLL_MS && !phase.hardStop.aborted; poll++) {
        const answer = await get(target);
        if (answer.label === "302") figures.ms.subset.push(performance.now() - asked);
        if (answer.label !== "202") break;
        if (poll === ORDINARY_TIMEOUT_MS / SUBSET_POLL_MS - 1) add(figures.statuses, "subset not ready in time");
        await sleep(SUBSET_POLL_MS);
      }
    }
    const wait = started + paceMs - Date.now();
    if (wait > 0 && Date.now() + wait < phase.until) await sleep(wait);
  }
  return figures;
}

/** Order reads (`GET /api/v1/orders/{id}`) one at a time, a new one at most every `paceMs`. */
export async function orderReads(
  phase: Phase,
  key: string,
  orderId: string,
  paceMs: number,
): Promise<{ statuses: Tally; ms: number[] }> {
  const result = { statuses: {} as Tally, ms: [] as number[] };
  for (let turn = 0; turn < MAX_TURNS && Date.now() < phase.until; turn++) {
    const started = Date.now();
    const signal = AbortSignal.any([phase.hardStop, AbortSignal.timeout(ORDINARY_TIMEOUT_MS)]);
    const answer = await timedGet(`${phase.url}/api/v1/orders/${orderId}`, key, signal);
    add(result.statuses, answer.label);
    if (answer.ok) result.ms.push(answer.ms);
    const wait = started + paceMs - Date.now();
    if (wait > 0) await sleep(wait);
  }
  return result;
}

export type HostileAccount = {
  key: string;
  /** A query of about 10 s of CPU (its `seq` makes each a new text). */
  cpuPath: (seq: number) => string;
  /** A query whose answer is just under the 8 MiB budget. */
  widePath: string;
  /** A subset of the whole table (its `seq` makes each a new request). */
  subsetPath: (seq: number) => string;
};

export type HostileFigures = { sent: number; statuses: Tally; slow_read_bytes: number };

/** Bytes a second the hostile account's slow readers read. */
export const SLOW_READ_BYTES_PER_SECOND = 2048;
/** The hostile clients that hang up do so after this long. */
const HANG_UP_MS = 1_000;

/**
 * The hostile account: one request every `intervalMs` (1,000: its 60 a minute) until the phase ends, in
 * turn a 10 s CPU query it waits for, an 8 MiB answer read at 2 KB/s, a 10 s CPU query it hangs up on
 * after 1 s, a subset of the whole table. Nothing it sent waits for an answer before the next is sent.
 * At the phase's end every one of its clients still open hangs up; resolves when all have.
 */
export async function hostileLoop(
  phase: Phase,
  account: HostileAccount,
  intervalMs: number,
  nextSeq: () => number,
): Promise<HostileFigures> {
  const figures: HostileFigures = { sent: 0, statuses: {}, slow_read_bytes: 0 };
  const leave = new AbortController();
  const inFlight: Promise<void>[] = [];
  const headers = { Authorization: `Bearer ${account.key}` };
  const count = async (kind: string, target: string, signal: AbortSignal) => {
    const answer = await timedGet(phase.url + target, account.key, signal);
    const label = answer.label === "client timeout" ? "hung up after 1 s" : answer.label;
    add(figures.statuses, `${kind} ${label}`);
  };
  const kinds = [
    () => count("cpu", account.cpuPath(nextSeq()), leave.signal),
    async () => {
      const read = await slowRead(
        new URL(phase.url + account.widePath),
        headers,
        SLOW_READ_BYTES_PER_SECOND,
        leave.signal,
      );
      figures.slow_read_bytes += read.bytes;
      add(figures.statuses, `wide ${read.status ?? "no answer"}${read.complete ? "" : " (hung up)"}`);
    },
    () => count("cpu", account.cpuPath(nextSeq()), AbortSignal.any([leave.signal, AbortSignal.timeout(HANG_UP_MS)])),
    () => count("subset", account.subsetPath(nextSeq()), leave.signal),
  ];
  const first = Date.now();
  for (let turn = 0; turn < MAX_TURNS && Date.now() < phase.until; turn++) {
    inFlight.push(kinds[turn % kinds.length]!());
    figures.sent++;
    // Against the schedule, not the last send: never more than one request per interval on average.
    const wait = first + (turn + 1) * intervalMs - Date.now();
    if (wait > 0) await sleep(Math.min(wait, Math.max(0, phase.until - Date.now())));
  }
  leave.abort();
  await Promise.all(inFlight);
  return figures;
}

/** Adds `from`'s counts to `into`. */
export function addTally(into: Tally, from: Tally): Tally {
  for (const [label, count] of Object.entries(from)) into[label] = (into[label] ?? 0) + count;
  return into;
}
