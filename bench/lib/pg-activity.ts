import type pg from "pg";
import { round } from "./common";
import { schedulingGroup } from "./cpu-share";

/**
 * What PostgreSQL's sessions of the bench database do, sampled every 50 ms (pg_stat_activity): how
 * often a statement waited on a lock and on whom, the longest statement seen running, and the
 * longest transaction seen open while its client did something else ("idle in transaction"). The
 * evidence for or against a lock held by slow data work making API statements wait.
 */
export type ActivitySummary = {
  samples: number;
  lock_wait_samples: number;
  lock_waits: string[];
  longest_active_ms: number;
  longest_active_query: string;
  longest_idle_in_transaction_ms: number;
  longest_idle_in_transaction_query: string;
};

type Row = {
  pid: number;
  state: string;
  wait_event_type: string | null;
  wait_event: string | null;
  blockers: number[];
  statement_ms: number;
  transaction_ms: number | null;
  query: string;
};

const SAMPLE = `
SELECT pid, state, wait_event_type, wait_event, pg_blocking_pids(pid) AS blockers,
       (extract(epoch FROM clock_timestamp() - query_start) * 1000)::float8 AS statement_ms,
       (extract(epoch FROM clock_timestamp() - xact_start) * 1000)::float8 AS transaction_ms,
       left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS query
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'`;

export function activitySampler(pool: pg.Pool) {
  const summary: ActivitySummary = {
    samples: 0,
    lock_wait_samples: 0,
    lock_waits: [],
    longest_active_ms: 0,
    longest_active_query: "",
    longest_idle_in_transaction_ms: 0,
    longest_idle_in_transaction_query: "",
  };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await pool.query<Row>(SAMPLE);
      summary.samples++;
      for (const row of rows) {
        if (row.wait_event_type === "Lock") {
          summary.lock_wait_samples++;
          const what = `${row.wait_event} by ${row.blockers.join(",")}: ${row.query.slice(0, 60)}`;
          if (summary.lock_waits.length < 10 && !summary.lock_waits.includes(what)) summary.lock_waits.push(what);
        }
        if (row.state === "active" && row.statement_ms > summary.longest_active_ms) {
          summary.longest_active_ms = round(row.statement_ms, 1);
          summary.longest_active_query = row.query;
        }
        if (
          row.state.startsWith("idle in transaction") &&
          (row.transaction_ms ?? 0) > summary.longest_idle_in_transaction_ms
        ) {
          summary.longest_idle_in_transaction_ms = round(row.transaction_ms ?? 0, 1);
          summary.longest_idle_in_transaction_query = row.query;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    /** The scheduling group (cpu cgroup, autogroup) of a backend serving an order read. */
    backendGroup: async () => {
      const { rows } = await pool.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query ILIKE '%orders%' ORDER BY state_change DESC LIMIT 1`,
      );
      return { pg_backend: rows[0] ? schedulingGroup(rows[0].pid) : "none seen" };
    },
    stop: async () => {
      stopped = true;
      await loop;
      return summary;
    },
  };
}
