import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Check, Quality, QualityReport } from "../../lib/schemas/quality";
import { db } from "../../lib/db/client";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { productsCsv, products, publicationDone } from "../tables/helpers";
import { buildTypeScriptClient, runCli, runCliOnTerminal } from "./cli";

/**
 * Both clients and contract Part 6 against the production server on a real PostgreSQL: `quality`
 * (TypeScript command and library, Python `quality()`) gives a version's report, and `changes`
 * (TypeScript command, Python `changes` and read_changes_pandas) stops before the first version whose
 * quality is not passed unless told to accept it. The versions are made by the server's worker; their
 * quality and report are then written as the gate (lib/tables, branch wt-quality) stores them:
 * version 2 held and released, version 3 warned.
 */
let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let orderId: string;

const cliEnv = () => ({ DATASET_ACCESS_URL: server.url, DATASET_ACCESS_KEY: key });
const PYTHON_CLIENT = path.resolve("clients/python");
const REASON = "Site redesign, checked by hand";

const dropHeld: Check = {
  name: "row_count_drop",
  column: null,
  value: 0.3,
  threshold: 0.2,
  level: "hold",
  outcome: "held",
};
const shiftWarned: Check = {
  name: "distribution_shift",
  column: "price",
  value: 0.31,
  threshold: 0.25,
  level: "warn",
  outcome: "warned",
};
const report = (rows: number, previous: number, checks: Check[]): QualityReport => ({
  rows,
  previous_rows: previous,
  changes: { inserted: 0, updated: 0, deleted: previous - rows },
  added_columns: [],
  columns: [
    {
      name: "price",
      type: "DOUBLE",
      null_fraction: 0,
      previous_null_fraction: 0,
      distinct: rows,
      previous_distinct: previous,
      min: 1.5,
      max: 60,
      mean: 30,
      psi: checks.includes(shiftWarned) ? 0.31 : 0.01,
    },
  ],
  checks,
});
const JUDGED: Record<number, { quality: Quality; report: QualityReport }> = {
  2: { quality: { status: "released", reason: REASON, checks: [dropHeld] }, report: report(35, 50, [dropHeld]) },
  3: { quality: { status: "warned", reason: null, checks: [shiftWarned] }, report: report(35, 35, [shiftWarned]) },
};

async function publish(version: number, rows: ReturnType<typeof products>) {
  const published = await publishTable({
    orderId,
    table: "prices",
    key: ["id"],
    parts: [{ name: `prices-${version}.csv`, source: { stream: Readable.from([Buffer.from(productsCsv(rows))]) } }],
  });
  expect(await publicationDone(published.publication, 240_000)).toMatchObject({ status: "ready", version });
}

type ChangesRun = { last_version: number; refused: object | null; files: { version: number }[] };
type PythonAnswer = {
  stopped: ChangesRun;
  accepted: ChangesRun;
  refusal: { version: number; status: string; message: string; versions: number[] } | null;
  versions: number[];
};

/** A python3 with pandas (read_changes_pandas needs it): Debian's, where the PATH's has none. */
async function pythonWithPandas(): Promise<string> {
  for (const candidate of ["python3", "/usr/bin/python3"]) {
    const has = await promisify(execFile)(candidate, ["-c", "import pandas"]).then(
      () => true,
      () => false,
    );
    if (has) return candidate;
  }
  throw new Error("No python3 with pandas here: apt-get install -y python3-pandas");
}

/** Runs `code` with dataset_access importable and the server in its environment; answers its JSON on stdout. */
async function python(code: string): Promise<unknown> {
  const { stdout } = await promisify(execFile)(await pythonWithPandas(), ["-c", code], {
    cwd: PYTHON_CLIENT,
    env: { ...process.env, ...cliEnv(), ORDER: orderId },
  });
  return JSON.parse(stdout);
}

beforeAll(async () => {
  env = await createTestEnvironment("quality_client");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "quality-client-"));
  const account = await buyer("quality-client");
  key = (await apiKey(account.id)).secret;
  orderId = (await order(account.id, { name: "judged" })).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", RATE_LIMIT_EXEMPT_BUYERS: account.id, DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  const build = buildTypeScriptClient();
  await publish(1, products(1, 50));
  // A few prices change each time, so the gate (once it runs) passes them; their stored reports say otherwise.
  await publish(
    2,
    products(1, 50, (id) => (id <= 5 ? id * 2 : id * 1.5)),
  );
  await publish(
    3,
    products(1, 50, (id) => (id <= 10 ? id * 2 : id * 1.5)),
  );
  const table = await db().orderTable.findFirstOrThrow({ where: { orderId, name: "prices" }, select: { id: true } });
  for (const [version, judged] of Object.entries(JUDGED)) {
    const stored = await db().tableVersion.update({
      where: { tableId_version: { tableId: table.id, version: Number(version) } },
      data: { quality: judged.quality },
    });
    await db().tablePublication.update({
      where: { id: stored.publicationId },
      data: { report: judged.report, reason: judged.quality.reason },
    });
  }
  await build;
}, 600_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

describe("quality in the TypeScript client", () => {
  it("quality gives the current version's report, or the one asked for, readably on a terminal", async () => {
    const current = await runCli(["quality", "--order", orderId, "--table", "prices", "--json"], cliEnv());
    expect(current.code, current.stderr).toBe(0);
    expect(JSON.parse(current.stdout)).toEqual(JUDGED[3]!.report);
    const second = await runCli(["quality", "--order", orderId, "--table", "prices", "--version", "2"], cliEnv());
    expect(JSON.parse(second.stdout)).toEqual(JUDGED[2]!.report);

    const shown = await runCliOnTerminal(
      ["quality", "--order", orderId, "--table", "prices", "--version", "2"],
      cliEnv(),
    );
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("prices version 2: released");
    expect(shown.stdout).toContain(`Reason: ${REASON}`);
    expect(shown.stdout).toContain("Rows: 35 (previous 50, -30.0%)");
    expect(shown.stdout).toMatch(/row_count_drop\s+-\s+30\.0%\s+20\.0%\s+hold\s+held/);
  });

  it.each([
    ["a version never made", ["--version", "9"], 3, "version_not_found"],
    ["a version that is no number", ["--version", "two"], 2, "--version must be a version number"],
    ["a table the order lacks", ["--table", "nope"], 3, "table_not_found"],
  ])("quality refuses %s", async (_, args, code, said) => {
    const base = ["quality", "--order", orderId, "--table", "prices"];
    const run = await runCli([...base, ...args], cliEnv());
    expect(run.code).toBe(code);
    expect(run.stderr).toContain(said);
  });

  it("changes stops before the released version 2 unless --accept-warnings, and says why", async () => {
    const dir = path.join(workDir, "ts-changes");
    const args = ["changes", "--order", orderId, "--table", "prices", "--since", "0", "--dir", dir, "--json"];
    const stopped = await runCli(args, cliEnv());
    expect(stopped.code, stopped.stderr).toBe(1);
    const report = JSON.parse(stopped.stdout);
    expect(report).toMatchObject({ last_version: 1, pruned: [], failures: [] });
    expect(report.files.map((file: { version: number }) => file.version)).toEqual([1]);
    expect(report.refused).toMatchObject({ version: 2, status: "released", reason: REASON });
    expect(report.refused.message).toMatch(/^prices version 2 was not applied: its quality is released/);
    expect((await fs.readdir(dir)).filter((name) => name.endsWith(".parquet"))).toEqual(["prices.v1.changes.parquet"]);

    const accepted = await runCli([...args, "--accept-warnings"], cliEnv());
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(JSON.parse(accepted.stdout)).toMatchObject({ last_version: 3, refused: null });
    expect((await fs.readdir(dir)).filter((name) => name.endsWith(".parquet")).sort()).toEqual([
      "prices.v1.changes.parquet",
      "prices.v2.changes.parquet",
      "prices.v3.changes.parquet",
    ]);
  });
});

describe("quality in the Python client", () => {
  it("quality() gives the current version's report, or the one asked for", async () => {
    const answers = await python(`
import json, dataset_access
client = dataset_access.Client()
print(json.dumps([client.quality(__import__("os").environ["ORDER"], "prices"),
                  client.quality(__import__("os").environ["ORDER"], "prices", version=2)]))`);
    expect(answers).toEqual([JUDGED[3]!.report, JUDGED[2]!.report]);
  });

  it("changes and read_changes_pandas stop before version 2 unless accept_warnings=True", async () => {
    const dir = path.join(workDir, "py-changes");
    const answer = (await python(`
import json, os, dataset_access
client, order = dataset_access.Client(), os.environ["ORDER"]
stopped = dataset_access.changes(client, order, "prices", 0, ${JSON.stringify(dir)})
try:
    client.read_changes_pandas(order, "prices", 0)
    refusal = None
except dataset_access.QualityRefusedError as error:
    refusal = {"version": error.version, "status": error.status, "message": str(error),
               "versions": sorted(set(int(v) for v in error.frame["_commit_version"]))}
frame = client.read_changes_pandas(order, "prices", 0, accept_warnings=True)
accepted = dataset_access.changes(client, order, "prices", 0, ${JSON.stringify(dir)}, accept_warnings=True)
print(json.dumps({"stopped": stopped, "refusal": refusal, "accepted": accepted,
                  "versions": sorted(set(int(v) for v in frame["_commit_version"]))}))`)) as PythonAnswer;
    expect(answer.stopped).toMatchObject({ last_version: 1, refused: { version: 2, status: "released" } });
    expect(answer.stopped.files.map((file) => file.version)).toEqual([1]);
    expect(answer.refusal).toMatchObject({ version: 2, status: "released", versions: [1] });
    expect(answer.refusal!.message).toMatch(/^prices version 2 was not applied: its quality is released/);
    expect(answer.versions).toEqual([1, 2, 3]);
    expect(answer.accepted).toMatchObject({ last_version: 3, refused: null });
  });

  it("the command prints the report and refuses as the TypeScript one does", async () => {
    const run = (args: string[]) =>
      promisify(execFile)("python3", ["dataset_access.py", ...args], {
        cwd: PYTHON_CLIENT,
        env: { ...process.env, ...cliEnv() },
      }).then(
        (done) => ({ code: 0, ...done }),
        (failed: { code: number; stdout: string; stderr: string }) => failed,
      );
    const json = await run(["quality", "--order", orderId, "--table", "prices", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual(JUDGED[3]!.report);
    const stopped = await run([
      "changes",
      "--order",
      orderId,
      "--table",
      "prices",
      "--since",
      "1",
      "--dir",
      path.join(workDir, "py-cli"),
    ]);
    expect(stopped.code).toBe(1);
    expect(JSON.parse(stopped.stdout).refused).toMatchObject({ version: 2, status: "released" });
  });
});
