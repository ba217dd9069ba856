import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pruneTable } from "../../lib/tables/admin";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { productsCsv, products, publicationDone, withoutQualityChecks } from "../tables/helpers";
import { buildTypeScriptClient, runCli, runCliOnTerminal } from "./cli";

/**
 * The TypeScript client's `tables` and `changes` commands and `sync` following an order's `files`
 * (contract Part 4, "Events, clients, dashboard"), built as users get it, against the production
 * server and its worker on a real PostgreSQL: a keyed snapshot table refreshed twice, and a table
 * whose first versions were pruned.
 */
let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let orderId: string;

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const cliEnv = () => ({ DATASET_ACCESS_URL: server.url, DATASET_ACCESS_KEY: key });

/** Version 1: products 1-50; version 2: 10 prices changed, 41-50 gone, 51-60 new; version 3: 5 more. */
const VERSIONS = [
  products(1, 50),
  [...products(1, 40, (id) => (id <= 10 ? id * 2 : id * 1.5)), ...products(51, 10)],
  [...products(1, 40, (id) => (id <= 10 ? id * 2 : id * 1.5)), ...products(51, 15)],
];
const CHANGES = [
  { inserted: 50, updated: 0, deleted: 0 },
  { inserted: 10, updated: 10, deleted: 10 },
  { inserted: 5, updated: 0, deleted: 0 },
];

async function publish(table: string, version: number, rows: ReturnType<typeof products>) {
  const published = await publishTable({
    orderId,
    table,
    key: ["id"],
    parts: [{ name: `${table}-${version}.csv`, source: { stream: Readable.from([Buffer.from(productsCsv(rows))]) } }],
  });
  const done = await publicationDone(published.publication, 240_000);
  expect(done).toMatchObject({ status: "ready", error: null, version });
  // Version 2 deletes 10 of 50 rows on purpose: the quality gate (Part 6) is tested elsewhere.
  if (version === 1) await withoutQualityChecks(orderId, table);
}

async function rowsByChangeType(file: string): Promise<Record<string, number>> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(
      `SELECT _change_type, count(*)::INTEGER AS n FROM read_parquet('${file.replaceAll("'", "''")}') GROUP BY 1`,
    );
    return Object.fromEntries(reader.getRowObjects().map((row) => [String(row._change_type), Number(row.n)]));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function asCounts(byType: Record<string, number>) {
  return {
    inserted: byType.insert ?? 0,
    updated: byType.update_postimage ?? 0,
    deleted: byType.delete ?? 0,
  };
}

beforeAll(async () => {
  env = await createTestEnvironment("ts_tables_client");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "ts-tables-client-"));
  const account = await buyer("tables-client");
  key = (await apiKey(account.id)).secret;
  orderId = (await order(account.id, { name: "refreshed" })).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      RATE_LIMIT_EXEMPT_BUYERS: account.id,
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
    },
  });
  await Promise.all([buildTypeScriptClient(), publish("prices", 1, VERSIONS[0]!)]);
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

describe("dataset-access with tables", () => {
  it(
    "sync follows the order's files: a new snapshot version's parts arrive, the old ones go with --delete",
    { timeout: 300_000 },
    async () => {
      const dir = path.join(workDir, "mirror");
      const first = await runCli(["sync", "--dir", dir, "--json"], cliEnv());
      expect(first.code, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({ files: { downloaded: 1 }, superseded: [] });
      expect(await fs.readdir(path.join(dir, orderId))).toEqual(["prices-1.csv"]);

      await publish("prices", 2, VERSIONS[1]!);
      const kept = await runCli(["sync", "--dir", dir, "--json"], cliEnv());
      expect(kept.code, kept.stderr).toBe(0);
      expect(JSON.parse(kept.stdout)).toMatchObject({
        files: { total: 1, downloaded: 1 },
        superseded: [{ order: orderId, file: "prices-1.csv", action: "kept" }],
      });
      expect((await fs.readdir(path.join(dir, orderId))).sort()).toEqual(["prices-1.csv", "prices-2.csv"]);

      const deleted = await runCli(["sync", "--dir", dir, "--delete", "--json"], cliEnv());
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(JSON.parse(deleted.stdout)).toMatchObject({
        files: { total: 1, skipped: 1, downloaded: 0 },
        superseded: [{ order: orderId, file: "prices-1.csv", action: "deleted" }],
      });
      expect(await fs.readdir(path.join(dir, orderId))).toEqual(["prices-2.csv"]);
      expect(await fs.readFile(path.join(dir, orderId, "prices-2.csv"), "utf8")).toBe(productsCsv(VERSIONS[1]!));
      const manifest = JSON.parse(await fs.readFile(path.join(dir, ".dataset-access.json"), "utf8"));
      expect(Object.keys(manifest.orders[orderId].files)).toEqual(["prices-2.csv"]);

      await publish("prices", 3, VERSIONS[2]!);
    },
  );

  it("tables --order lists each table's current version", async () => {
    const listed = await runCli(["tables", "--order", orderId, "--json"], cliEnv());
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ name: "prices", mode: "snapshot", key: ["id"], version: 3, rows: 55 }),
    ]);
    const usage = await runCli(["tables"], cliEnv());
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("tables needs --order ID.");
    const missing = await runCli(["tables", "--order", `ord_${"0".repeat(32)}`], cliEnv());
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/^The API refused: order_not_found: /);
  });

  it(
    "changes --since 0 writes every version's change file, verified and recorded; a rerun fetches nothing",
    { timeout: 120_000 },
    async () => {
      const dir = path.join(workDir, "changes");
      const run = await runCli(
        ["changes", "--order", orderId, "--table", "prices", "--since", "0", "--dir", dir, "--json"],
        cliEnv(),
      );
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({
        order: orderId,
        table: "prices",
        format: "parquet",
        since: 0,
        current_version: 3,
        last_version: 3,
        pruned: [],
        failures: [],
      });
      expect(report.files.map((file: { file: string }) => file.file)).toEqual([
        "prices.v1.changes.parquet",
        "prices.v2.changes.parquet",
        "prices.v3.changes.parquet",
      ]);
      const manifest = JSON.parse(await fs.readFile(path.join(dir, ".dataset-access-changes.json"), "utf8"));
      for (const [index, file] of report.files.entries()) {
        expect(file).toMatchObject({ action: "written", verified_by: "sha256", changes: CHANGES[index] });
        const bytes = await fs.readFile(path.join(dir, file.file));
        expect(sha256(bytes)).toBe(file.sha256);
        expect(manifest.files[file.file]).toMatchObject({
          version: index + 1,
          sha256: file.sha256,
          size: bytes.length,
        });
        // The rows of the file itself agree with the counts the version carries.
        expect(asCounts(await rowsByChangeType(path.join(dir, file.file)))).toEqual(CHANGES[index]);
      }
      expect((await fs.readdir(dir)).filter((name) => name.endsWith(".part"))).toEqual([]);

      // Issue #39: docs/clients.md showed this output without lines it prints. Its example is the output, line for line.
      const shown = await runCliOnTerminal(
        ["changes", "--order", orderId, "--table", "prices", "--since", "0", "--dir", path.join(workDir, "shown")],
        cliEnv(),
      );
      expect(shown.code, shown.stdout).toBe(0);
      const documented = (await fs.readFile("docs/clients.md", "utf8"))
        .split("npx dataset-access changes --order ord_... --table prices --since 0 --dir changes/\n")[1]!
        .split("\n\n")[0]!
        .split("\n")
        .map((line) => line.replace(/^# /, ""));
      expect(shown.stdout.trimEnd().split(/\r?\n/)).toEqual(documented);

      const again = await runCli(
        ["changes", "--order", orderId, "--table", "prices", "--since", "0", "--dir", dir, "--json"],
        cliEnv(),
      );
      expect(again.code, again.stderr).toBe(0);
      const rerun = JSON.parse(again.stdout);
      expect(rerun.last_version).toBe(3);
      expect(
        rerun.files.map((file: { action: string; bytes_fetched: number }) => [file.action, file.bytes_fetched]),
      ).toEqual([
        ["skipped", 0],
        ["skipped", 0],
        ["skipped", 0],
      ]);

      const current = await runCli(
        ["changes", "--order", orderId, "--table", "prices", "--since", "3", "--dir", dir, "--json"],
        cliEnv(),
      );
      expect(JSON.parse(current.stdout)).toMatchObject({ last_version: 3, files: [], pruned: [] });
    },
  );

  it("resumes a partial change file from where it stopped, and fetches only the versions after --since", async () => {
    const full = path.join(workDir, "changes", "prices.v2.changes.parquet");
    const bytes = await fs.readFile(full);
    const dir = path.join(workDir, "resume");
    await fs.mkdir(dir);
    const half = Math.floor(bytes.length / 2);
    await fs.writeFile(path.join(dir, "prices.v2.changes.parquet.part"), bytes.subarray(0, half));
    const run = await runCli(
      ["changes", "--order", orderId, "--table", "prices", "--since", "1", "--dir", dir, "--json"],
      cliEnv(),
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.last_version).toBe(3);
    expect(report.files).toEqual([
      expect.objectContaining({
        version: 2,
        action: "written",
        resumed_from: half,
        bytes_fetched: bytes.length - half,
      }),
      expect.objectContaining({ version: 3, action: "written", resumed_from: 0 }),
    ]);
    expect(sha256(await fs.readFile(path.join(dir, "prices.v2.changes.parquet")))).toBe(sha256(bytes));
    expect((await fs.readdir(dir)).sort()).toEqual([
      ".dataset-access-changes.json",
      "prices.v2.changes.parquet",
      "prices.v3.changes.parquet",
    ]);
  });

  it("waits while the server makes the JSON Lines form (202), then writes it; prints the last version", async () => {
    const dir = path.join(workDir, "jsonl");
    const run = await runCli(
      ["changes", "--order", orderId, "--table", "prices", "--since", "1", "--dir", dir, "--format", "jsonl", "--json"],
      cliEnv(),
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ format: "jsonl", last_version: 3, failures: [] });
    const lines = (await fs.readFile(path.join(dir, "prices.v2.changes.jsonl"), "utf8")).trim().split("\n");
    // 10 inserts, 10 deletes, 10 pairs of pre- and post-images.
    expect(lines).toHaveLength(40);
    const types = lines.map((line) => JSON.parse(line)._change_type as string);
    expect(types.filter((type) => type === "update_postimage")).toHaveLength(10);
    expect(report.files[0]).toMatchObject({ version: 2, file: "prices.v2.changes.jsonl", verified_by: "sha256" });
  });

  it(
    "reports versions pruned after --since and stops the last version before them (exit 1)",
    { timeout: 300_000 },
    async () => {
      for (const [index, rows] of VERSIONS.entries()) await publish("stock", index + 1, rows);
      await pruneTable(orderId, "stock", 1);
      const dir = path.join(workDir, "pruned");
      const run = await runCli(
        ["changes", "--order", orderId, "--table", "stock", "--since", "0", "--dir", dir, "--json"],
        cliEnv(),
      );
      expect(run.code, run.stderr).toBe(1);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({ current_version: 3, pruned: [1, 2], last_version: 0 });
      expect(report.files.map((file: { version: number }) => file.version)).toEqual([3]);
      const unknown = await runCli(
        ["changes", "--order", orderId, "--table", "nope", "--since", "0", "--dir", dir, "--json"],
        cliEnv(),
      );
      expect(unknown.code).toBe(3);
      expect(unknown.stderr).toMatch(/table_not_found/);
      const usage = await runCli(["changes", "--order", orderId, "--table", "stock", "--dir", dir], cliEnv());
      expect(usage.code).toBe(2);
    },
  );
});
