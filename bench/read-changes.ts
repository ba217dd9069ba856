import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import pg from "pg";
import { createBuyer } from "../lib/buyers";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { makeRendition } from "../lib/datasets/renditions";
import { db, disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/queue";
import { createOrder } from "../lib/operator/orders";
import { processPendingNow } from "../lib/tables/pipeline";
import { publishTable } from "../lib/tables/publish";
import {
  createBenchKeys,
  benchWorkspace,
  log,
  median,
  report,
  requireProductionBuild,
  round,
  startAppServer,
} from "./lib/common";
import { requireCurl } from "./lib/curl";
import { benchRounds, spread } from "./lib/interleaved";

/**
 * The Python client's `read_changes_pandas` against what a buyer would do by hand in the same run:
 * curl the same change file from the API (-L, following the redirect to the signed URL) and read it
 * with pandas. A keyed table of BENCH_CHANGE_PANDAS_ROWS rows (default 100,000) whose second version
 * updates half of them: a change file of as many rows (pre- and postimages). Without pyarrow (as
 * here) both sides read the change file's JSON Lines form; its rendition is made before the rounds.
 * BENCH_ROUNDS (at least 3) interleaved rounds; the ratio is the median of the rounds' (curl + pandas
 * time over the client's) with its spread.
 */
requireProductionBuild();
requireCurl("bench/read-changes.ts");
const ROWS = Number(process.env.BENCH_CHANGE_PANDAS_ROWS ?? 100_000);
const TABLE = "products";

const { databaseUrl, workDir } = await benchWorkspace("read-changes");
const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });

function timed(command: string, args: string[], env: Record<string, string>): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve(Number(process.hrtime.bigint() - started) / 1e9)
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}`)),
    );
  });
}

function productsCsv(version: number): string {
  const lines = ["id,name,price,in_stock"];
  for (let id = 1; id <= ROWS; id++) {
    const price = (id % 1000) / 10 + (version === 2 && id % 2 === 0 ? 1 : 0);
    lines.push(`${id},Product ${id},${price.toFixed(2)},${id % 3 !== 0}`);
  }
  return lines.join("\n") + "\n";
}

let stopApp: (() => Promise<void>) | undefined;
try {
  const buyer = await createBuyer("bench-read-changes@example.com");
  const order = await createOrder({ buyerId: buyer.id, name: "weekly products", status: "delivered" });
  log(`publishing two versions of ${ROWS} rows, the second updating half of them`);
  for (const version of [1, 2]) {
    await publishTable({
      orderId: order.id,
      table: TABLE,
      key: version === 1 ? ["id"] : undefined,
      parts: [{ name: `products-v${version}.csv`, source: { stream: Readable.from([productsCsv(version)]) } }],
    });
  }
  await processPendingNow();
  const made = await db().tableVersion.findFirstOrThrow({
    where: { version: 2, table: { orderId: order.id, name: TABLE } },
    select: { changeFileId: true, changes: true },
  });
  log(`version 2 changes: ${JSON.stringify(made.changes)}`);
  if ((await makeRendition(made.changeFileId!, "jsonl")) !== "ready") throw new Error("no JSON Lines rendition");
  await closeEnginePool();

  const keys = await createBenchKeys(pool, [buyer.id]);
  const app = await startAppServer({
    databaseUrl,
    storageDir: process.env.STORAGE_DIR!,
    env: { RATE_LIMIT_EXEMPT_BUYERS: buyer.id, JOBS_WORKER: "off" },
  });
  stopApp = app.stop;
  const env = {
    DATASET_ACCESS_URL: app.url,
    DATASET_ACCESS_KEY: keys.get(buyer.id)!,
    ORDER: order.id,
    TABLE,
    ROWS: String(ROWS),
    URL: `${app.url}/api/v1/orders/${order.id}/tables/${TABLE}/versions/2/changes?format=jsonl`,
    OUT: path.join(workDir, "changes.jsonl"),
    PYTHONPATH: path.resolve("clients/python"),
  };
  const client = () =>
    timed(
      "/usr/bin/python3",
      [
        "-c",
        `import os, dataset_access
frame = dataset_access.Client().read_changes_pandas(os.environ["ORDER"], os.environ["TABLE"], 1)
assert len(frame) == int(os.environ["ROWS"]), len(frame)`,
      ],
      env,
    );
  const byHand = () =>
    timed(
      "sh",
      [
        "-c",
        `curl -sS -L --fail -H "Authorization: Bearer $DATASET_ACCESS_KEY" -o "$OUT" "$URL" && /usr/bin/python3 -c '
import os, pandas
frame = pandas.read_json(os.environ["OUT"], lines=True)
assert len(frame) == int(os.environ["ROWS"]), len(frame)'`,
      ],
      env,
    );

  const rounds = benchRounds();
  const runs: { hand: number; client: number }[] = [];
  for (let index = 0; index < rounds; index++) {
    const hand = await byHand();
    const ours = await client();
    log(`round ${index + 1}: curl + pandas ${round(hand, 2)} s, read_changes_pandas ${round(ours, 2)} s`);
    runs.push({ hand, client: ours });
  }
  const ratio = spread(runs.map((run) => run.hand / run.client));
  await report(
    "read-changes",
    {
      rounds,
      change_rows: ROWS,
      format: "jsonl (no pyarrow)",
      curl_pandas_s: round(median(runs.map((run) => run.hand)), 2),
      read_changes_pandas_s: round(median(runs.map((run) => run.client)), 2),
      speed_to_curl_pandas: ratio,
    },
    `read_changes_pandas of ${ROWS} change rows: ${ratio.median}x the speed of curl + pandas.read_json (${ratio.min}-${ratio.max})`,
  );
} finally {
  await stopApp?.();
  await pool.end();
  await closeJobQueue();
  await disconnectDb();
  await fs.rm(workDir, { recursive: true, force: true });
}
