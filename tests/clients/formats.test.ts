import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renditionName as clientRenditionName } from "../../clients/typescript/src/formats";
import { renditionName as serverRenditionName, RENDITION_FORMATS } from "../../lib/data-formats";
import { datasetJobsDone, mixedFiles, PRODUCT_COLUMNS, PRODUCT_ROWS, readParquetFile } from "../datasets/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { buildTypeScriptClient, runCli } from "./cli";
import { startCountingProxy } from "./proxy";

/**
 * The `dataset-access` command's `--format` against the production server and its job worker: a
 * sync of an order's data files as Parquet renditions, verified by the renditions' own sha256 and
 * read back with DuckDB; a CSV rendition made on first request (202, Retry-After) waited for; the
 * files that can have none reported. Through a proxy that records every answer's status.
 */
type ApiFile = {
  id: string;
  name: string;
  sha256: string;
  renditions: { format: string; size: number | null; sha256: string | null; status: string }[];
};

let env: TestEnvironment;
let server: TestServer;
let proxy: Awaited<ReturnType<typeof startCountingProxy>>;
let workDir: string;
let key: string;
let orderId: string;

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

beforeAll(async () => {
  env = await createTestEnvironment("client_formats");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "client-formats-"));
  const account = await buyer("client-formats");
  key = (await apiKey(account.id)).secret;
  const [created] = await Promise.all([
    order(account.id, { name: "data", files: await mixedFiles(workDir) }),
    buildTypeScriptClient(),
  ]);
  orderId = created.id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", RATE_LIMIT_EXEMPT_BUYERS: account.id, DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  proxy = await startCountingProxy(server.url);
  // The worker profiles every data file and makes its Parquet rendition.
  await datasetJobsDone();
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const cliEnv = () => ({ DATASET_ACCESS_URL: proxy.url, DATASET_ACCESS_KEY: key });

/** The order's files as the API gives them now. */
async function apiFiles(): Promise<Record<string, ApiFile>> {
  const answer = await fetch(`${server.url}/api/v1/orders/${orderId}`, { headers: { authorization: `Bearer ${key}` } });
  const { files } = (await answer.json()) as { files: ApiFile[] };
  return Object.fromEntries(files.map((file) => [file.name, file]));
}

const renditionSha256 = (file: ApiFile, format: string) => file.renditions.find((r) => r.format === format)?.sha256;

describe("dataset-access --format", () => {
  it(
    "sync --format parquet: data files as Parquet, verified by the renditions' sha256; binary and unreadable files reported; a rerun transfers nothing, a partial one resumes",
    { timeout: 120_000 },
    async () => {
      const dir = path.join(workDir, "parquet");
      const run = await runCli(["sync", "--dir", dir, "--format", "parquet", "--json"], cliEnv());
      expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({
        format: "parquet",
        // ragged.csv cannot be read: its publication failed, so it is no file of the order (contract Part 8).
        files: { total: 4, downloaded: 3, failed: 0, refused: 0, no_rendition: 1 },
        failures: [],
        refused: [],
      });
      expect(report.no_rendition).toEqual([
        { order: orderId, file: "archive.bin", reason: expect.stringMatching(/binary/) },
      ]);
      expect((await fs.readdir(path.join(dir, orderId))).sort()).toEqual([
        "catalog.parquet",
        "listings.parquet",
        "products.parquet",
      ]);
      const files = await apiFiles();
      const local = (name: string) => fs.readFile(path.join(dir, orderId, name));
      expect(sha256(await local("products.parquet"))).toBe(renditionSha256(files["products.csv"]!, "parquet"));
      expect(sha256(await local("listings.parquet"))).toBe(renditionSha256(files["listings.json"]!, "parquet"));
      // Already Parquet: the original, as delivered.
      expect(sha256(await local("catalog.parquet"))).toBe(files["catalog.parquet"]!.sha256);
      for (const name of ["products.parquet", "listings.parquet", "catalog.parquet"]) {
        expect(await readParquetFile(path.join(dir, orderId, name))).toEqual({
          columns: PRODUCT_COLUMNS,
          rows: PRODUCT_ROWS,
        });
      }
      const manifest = JSON.parse(await fs.readFile(path.join(dir, ".dataset-access.json"), "utf8"));
      expect(manifest.orders[orderId].files).toEqual({
        "products.parquet": {
          id: files["products.csv"]!.id,
          sha256: renditionSha256(files["products.csv"]!, "parquet"),
          size: expect.any(Number),
          format: "parquet",
          rendition: true,
        },
        "listings.parquet": expect.objectContaining({ id: files["listings.json"]!.id, rendition: true }),
        "catalog.parquet": expect.objectContaining({ id: files["catalog.parquet"]!.id, rendition: false }),
      });

      const bytesBefore = proxy.state.downloadBytes;
      const again = await runCli(["sync", "--dir", dir, "--format", "parquet", "--json"], cliEnv());
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout).files).toMatchObject({ downloaded: 0, skipped: 3, no_rendition: 1 });
      expect(proxy.state.downloadBytes).toBe(bytesBefore);

      // A partial rendition resumes like an original: only the rest is asked for, and the whole verified.
      const target = path.join(dir, orderId, "products.parquet");
      const whole = await fs.readFile(target);
      const third = Math.floor(whole.length / 3);
      await fs.rm(target);
      await fs.writeFile(`${target}.part`, whole.subarray(0, third));
      const asked = proxy.requests.length;
      const resumed = await runCli(["sync", "--dir", dir, "--format", "parquet", "--json"], cliEnv());
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout).files).toMatchObject({ resumed: 1, skipped: 2, failed: 0 });
      expect(proxy.requests.slice(asked).find((request) => request.path.startsWith("/api/dl/"))?.range).toBe(
        `bytes=${third}-`,
      );
      expect(await fs.readFile(target)).toEqual(whole);

      // Without --format into the same directory: the originals beside the renditions, both in the manifest.
      const originals = await runCli(["sync", "--dir", dir, "--json"], cliEnv());
      expect(originals.code, originals.stderr).toBe(0);
      expect(JSON.parse(originals.stdout)).toMatchObject({
        format: null,
        files: { downloaded: 3, skipped: 1, no_rendition: 0 },
      });
      expect((await fs.readdir(path.join(dir, orderId))).sort()).toEqual([
        "archive.bin",
        "catalog.parquet",
        "listings.json",
        "listings.parquet",
        "products.csv",
        "products.parquet",
      ]);
      const both = JSON.parse(await fs.readFile(path.join(dir, ".dataset-access.json"), "utf8")).orders[orderId].files;
      expect(both["products.csv"]).toMatchObject({
        format: "csv",
        rendition: false,
        sha256: files["products.csv"]!.sha256,
      });
      expect(both["products.parquet"]).toMatchObject({ format: "parquet", rendition: true });
    },
  );

  it(
    "download --format csv: waits while the server makes the CSV (202 with Retry-After), then fetches it verified by its own sha256",
    { timeout: 120_000 },
    async () => {
      const dir = path.join(workDir, "csv");
      const catalog = (await apiFiles())["catalog.parquet"]!;
      expect(catalog.renditions.find((r) => r.format === "csv")).toBeUndefined(); // made on first request
      const asked = proxy.requests.length;
      const run = await runCli(
        ["download", orderId, "catalog.parquet", "--format", "csv", "--dir", dir, "--json"],
        cliEnv(),
      );
      expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
      const made = renditionSha256((await apiFiles())["catalog.parquet"]!, "csv");
      expect(JSON.parse(run.stdout)).toMatchObject({
        order: orderId,
        format: "csv",
        files: [{ file: "catalog.parquet", path: path.join(dir, "catalog.csv"), format: "csv", sha256: made }],
        no_rendition: [],
        failures: [],
      });
      const bytes = await fs.readFile(path.join(dir, "catalog.csv"));
      expect(sha256(bytes)).toBe(made);
      expect(bytes.toString("utf8").split("\n")[0]).toBe(PRODUCT_COLUMNS.join(","));
      // It met the 202 and asked again until the 302.
      const answers = proxy.requests
        .slice(asked)
        .filter((request) => request.path === `/api/v1/orders/${orderId}/files/${catalog.id}?format=csv`)
        .map((request) => request.status);
      expect(answers[0]).toBe(202);
      expect(answers.at(-1)).toBe(302);
      expect(answers.filter((status) => status === 302)).toHaveLength(1);
    },
  );

  it("download FILE --format of a binary file writes nothing, says why and exits 1", async () => {
    const dir = path.join(workDir, "binary");
    const run = await runCli(
      ["download", orderId, "archive.bin", "--format", "parquet", "--dir", dir, "--json"],
      cliEnv(),
    );
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      files: [],
      no_rendition: [{ file: "archive.bin", reason: expect.stringMatching(/binary/) }],
    });
    expect(await fs.readdir(dir)).toEqual([]);
  });
});

it("both clients name a rendition as the server names its download", async () => {
  const names = [
    "products.csv",
    "products.CSV.gz",
    "a.b.tsv",
    "x.tab.gz",
    "data.json",
    "events.ndjson",
    "events.jsonl.gz",
    "catalog.parquet",
    ".csv",
    "..csv",
    "no-extension",
    "été 2026.json",
  ];
  const python = await promisify(execFile)(
    "python3",
    [
      "-c",
      "import json, sys, dataset_access; print(json.dumps([[dataset_access.rendition_name(n, f) for f in sys.argv[2:]] for n in json.loads(sys.argv[1])]))",
      JSON.stringify(names),
      ...RENDITION_FORMATS,
    ],
    { cwd: path.resolve("clients/python") },
  );
  const server = names.map((name) => RENDITION_FORMATS.map((format) => serverRenditionName(name, format)));
  expect(names.map((name) => RENDITION_FORMATS.map((format) => clientRenditionName(name, format)))).toEqual(server);
  expect(JSON.parse(python.stdout)).toEqual(server);
});
