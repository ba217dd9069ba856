import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { engineProcessesOf, waitForExit } from "../faults/helpers/processes";

/**
 * A buyer's query that does not stop when DuckDB is interrupted at its time limit (contract Part 7,
 * docs/explore.md#limits): its engine process is killed after the grace and replaced, the buyer gets
 * 422 query_timeout, and the next query runs in a new process. DuckDB looks at the interrupt between
 * chunks of rows; one call of `levenshtein` on two 200,000-character strings (4 * 10^10 steps, minutes
 * of one core) never does, so the kill, not the interrupt, ends it.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;
let key: string;

const DEAF_TO_INTERRUPT = "SELECT levenshtein(repeat('a', 200000), repeat('b', 200000)) AS distance";

beforeAll(async () => {
  env = await createTestEnvironment("explore-query-kill");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "explore-query-kill-"));
  const account = await buyer("query-kill");
  orderId = (await order(account.id, { name: "No tables needed" })).id;
  key = (await apiKey(account.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    // One query process, so the process seen before the query is the one it runs in.
    env: {
      REDIS_URL: "",
      JOBS_WORKER: "off",
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
      DATASET_QUERY_SECONDS: "1",
      DATASET_QUERY_KILL_GRACE_SECONDS: "1",
      DATASET_QUERY_PROCESSES: "1",
    },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const sql = (q: string) =>
  fetch(`${server.url}/api/v1/orders/${orderId}/sql?${new URLSearchParams({ q })}`, {
    headers: { Authorization: `Bearer ${key}` },
  });

/** The server's engine processes. */
const engineProcesses = () => engineProcessesOf(server.pid!);

describe("a query deaf to the interrupt", () => {
  it("is answered 422 query_timeout, its process killed and replaced, and the next query runs", async () => {
    const first = await sql("SELECT 1 AS one");
    expect(first.status, await first.clone().text()).toBe(200);
    const before = await engineProcesses();
    expect(before).toHaveLength(1);

    const slow = await sql(DEAF_TO_INTERRUPT);
    const text = await slow.text();
    expect(slow.status, text).toBe(422);
    expect(JSON.parse(text)).toMatchObject({ code: "query_timeout" });
    expect(await waitForExit(before)).toBe(true);
    // Killed by the pool for the time limit, not ended for another reason.
    expect(await server.loggedSoFar()).toMatch(
      new RegExp(`"engine_pid":${before[0]},[^\\n]*"reason":"timeout"[^\\n]*orderSql task \\(SIGKILL, timeout\\)`),
    );

    const next = await sql("SELECT 42 AS answer");
    expect(next.status, await next.clone().text()).toBe(200);
    expect(await next.json()).toMatchObject({ columns: [{ name: "answer" }], rows: [[42]], truncated: false });
    const after = await engineProcesses();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
  });
});

/** Each thread's niceness (field 19 of /proc/PID/task/TID/stat). */
async function threadNiceness(pid: number): Promise<number[]> {
  const threads = await fs.readdir(`/proc/${pid}/task`);
  const stats = await Promise.all(threads.map((tid) => fs.readFile(`/proc/${pid}/task/${tid}/stat`, "utf8")));
  return stats.map((stat) => Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));
}

describe("the query processes' priority", () => {
  it("is DATASET_QUERY_NICE (10) in every thread, DuckDB's included; the server's own stays as started", async () => {
    const answered = await sql("SELECT count(*) AS n FROM range(1000000)");
    expect(answered.status, await answered.clone().text()).toBe(200);
    const [engine] = await engineProcesses();
    const niceness = await threadNiceness(engine!);
    // Node's threads and the DuckDB instance made ahead for the next query (2 threads or more).
    expect(niceness.length).toBeGreaterThan(6);
    expect(new Set(niceness)).toEqual(new Set([10]));
    // The server keeps the niceness it was started with: this test's (0, unless run under `nice`).
    expect(new Set(await threadNiceness(server.pid!))).toEqual(new Set([os.getPriority()]));
  });
});
