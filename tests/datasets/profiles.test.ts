import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { setOrderStatus } from "../../lib/operator/orders";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import {
  badFiles,
  bigJsonArray,
  goodFiles,
  PRODUCT_COLUMNS,
  PRODUCT_ROWS,
  datasetJobsDone,
  readParquetFile,
} from "./helpers";

/**
 * What is inside delivered files, over HTTP against the production server and its job worker, on
 * the storage driver the run uses (STORAGE_DRIVER=s3: the tests' S3 store): every format profiled
 * (columns, rows, first rows), previews, Parquet/CSV/JSONL renditions fetched through their signed
 * URLs, verified by their sha256 and read back with DuckDB; bad input failed with a reason while
 * the original stays downloadable and the worker keeps working.
 */

type ApiFile = {
  id: string;
  name: string;
  sha256: string;
  format: string;
  compression: string | null;
  profile_status: string;
  rows: number | null;
  columns: { name: string; type: string; nullable: boolean }[] | null;
  profile_error: string | null;
  renditions: { format: string; size: number | null; sha256: string | null; status: string }[];
};

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let orderId: string;
let refundedOrderId: string;
let otherKey: string;

beforeAll(async () => {
  env = await createTestEnvironment("datasets");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "datasets-"));
  const account = await buyer("datasets");
  const bad = await badFiles(workDir);
  const delivered = await order(account.id, {
    files: {
      ...(await goodFiles(workDir)),
      "big-array.json": bigJsonArray(300_000),
      "archive.bin": Buffer.from([0, 1, 2, 3]),
      ...Object.fromEntries(Object.entries(bad).map(([name, { content }]) => [name, content])),
    },
  });
  orderId = delivered.id;
  const refunded = await order(account.id, { files: { "refunded.csv": Buffer.from("a\n1\n") } });
  refundedOrderId = refunded.id;
  key = (await apiKey(account.id)).secret;
  otherKey = (await apiKey((await buyer("datasets-other")).id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  // The worker profiles every data file and makes its Parquet rendition.
  await datasetJobsDone();
  await setOrderStatus(refundedOrderId, "refunded");
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

/** A request as a well-behaved client makes it: past the account's 60/minute, it waits as told. */
async function get(pathAndQuery: string, bearer = key): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${server.url}/api/v1${pathAndQuery}`, {
      headers: { Authorization: `Bearer ${bearer}` },
      redirect: "manual",
      signal: AbortSignal.timeout(30_000),
    });
    if (response.status !== 429 || attempt === 2) return response;
    await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get("retry-after")) * 1000));
  }
}

let cachedFiles: ApiFile[] | undefined;
/** The order's files as the API lists them (read once; again with `fresh`). */
async function files(fresh = false): Promise<ApiFile[]> {
  if (cachedFiles && !fresh) return cachedFiles;
  const response = await get(`/orders/${orderId}`);
  expect(response.status).toBe(200);
  cachedFiles = ((await response.json()) as { files: ApiFile[] }).files;
  return cachedFiles;
}

const listed = async (name: string, fresh = false) => (await files(fresh)).find((file) => file.name === name);
const fileNamed = async (name: string, fresh = false) => (await listed(name, fresh))!;

/** Follows a download's 302 to its signed URL and returns the bytes. */
async function download(file: ApiFile, format?: string): Promise<Buffer> {
  const answer = await get(`/orders/${orderId}/files/${file.id}${format ? `?format=${format}` : ""}`);
  expect(answer.status).toBe(302);
  const bytes = await fetch(answer.headers.get("location")!, { signal: AbortSignal.timeout(60_000) });
  expect(bytes.status).toBe(200);
  return Buffer.from(await bytes.arrayBuffer());
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Reads Parquet bytes with DuckDB: their column names and row count. */
async function readParquet(bytes: Buffer): Promise<{ columns: string[]; rows: number }> {
  const file = path.join(workDir, `read-${sha256(bytes)}.parquet`);
  await fs.writeFile(file, bytes);
  return readParquetFile(file);
}

describe("profiles of delivered files", () => {
  it.each([
    ["products.csv", "csv", null],
    ["products.tsv", "tsv", null],
    ["products.json", "json", null],
    ["products.jsonl", "jsonl", null],
    ["products.csv.gz", "csv", "gzip"],
    ["products.parquet", "parquet", null],
  ])("%s: format, columns, rows and a ready Parquet rendition", async (name, format, compression) => {
    const file = await fileNamed(name);
    expect(file).toMatchObject({
      format,
      compression,
      profile_status: "ready",
      rows: PRODUCT_ROWS,
      profile_error: null,
    });
    expect(file.columns!.map((column) => column.name)).toEqual(PRODUCT_COLUMNS);
    expect(file.columns!.find((column) => column.name === "note")!.nullable).toBe(true);
    expect(file.columns!.find((column) => column.name === "id")).toMatchObject({ nullable: false });
    const parquet = file.renditions.find((rendition) => rendition.format === "parquet");
    expect(parquet).toMatchObject({
      status: "ready",
      size: expect.any(Number),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it("a JSON file that is one big array is read element by element", async () => {
    expect(await fileNamed("big-array.json")).toMatchObject({ profile_status: "ready", rows: 300_000 });
  });

  it("a binary file has no profile", async () => {
    expect(await fileNamed("archive.bin")).toMatchObject({
      format: "binary",
      profile_status: "none",
      rows: null,
      columns: null,
      renditions: [],
    });
  });

  it.each([
    "ragged.csv",
    "latin1.csv",
    "nul.csv",
    "empty.csv",
    "cut-short.json",
    "footer.parquet",
    "truncated.parquet",
    "binary.csv",
    "random.jsonl",
    "long-line.csv",
    "bomb.csv.gz",
  ])("%s fails with a reason the operator reads; no buyer sees it (its publication failed)", async (name) => {
    const { reason } = (await badFiles(workDir))[name]!;
    const row = await db().orderFile.findFirstOrThrow({
      where: { orderId, name },
      select: { id: true, profileStatus: true, profileError: true, rows: true, publication: true },
    });
    expect(row).toMatchObject({ profileStatus: "failed", rows: null });
    expect(row.profileError).toMatch(reason);
    expect(row.profileError).not.toMatch(/\/tmp\/|storage|\n/); // no server paths, one line
    // table:versions shows why: a part of a failed publication is no file of the order (contract Part 8).
    expect(row.publication).toMatchObject({ status: "failed", error: expect.stringContaining(row.profileError!) });
    expect(await listed(name)).toBeUndefined();
    for (const suffix of ["", "?format=parquet", "/preview"]) {
      await expectProblem(await get(`/orders/${orderId}/files/${row.id}${suffix}`), 404, "file_not_found");
    }
  });
});

describe("previews", () => {
  it("gives the first rows in column order, JSON values and ISO 8601 timestamps", async () => {
    const file = await fileNamed("products.csv");
    const response = await get(`/orders/${orderId}/files/${file.id}/preview?limit=3`);
    expect(response.status).toBe(200);
    expect(response.headers.get("ratelimit")).toMatch(/r=\d+/);
    const preview = (await response.json()) as { columns: ApiFile["columns"]; rows: unknown[][]; total_rows: number };
    expect(preview.total_rows).toBe(PRODUCT_ROWS);
    expect(preview.columns).toEqual(file.columns);
    expect(preview.rows).toEqual([
      [1, 'Product 1, "deluxe"', 1.25, "2026-10-01T08:00:00", null],
      [2, 'Product 2, "deluxe"', 2.5, "2026-10-02T08:00:00", "note 1"],
      [3, 'Product 3, "deluxe"', 3.75, "2026-10-03T08:00:00", "note 2"],
    ]);
    const all = (await (await get(`/orders/${orderId}/files/${file.id}/preview?limit=100`)).json()) as {
      rows: unknown[];
    };
    expect(all.rows).toHaveLength(100);
    const byDefault = (await (await get(`/orders/${orderId}/files/${file.id}/preview`)).json()) as { rows: unknown[] };
    expect(byDefault.rows).toHaveLength(20);
  });

  it.each([
    ["limit=0", 400, "invalid_request"],
    ["limit=101", 400, "invalid_request"],
    ["limit=ten", 400, "invalid_request"],
  ])("refuses %s", async (query, status, code) => {
    const file = await fileNamed("products.csv");
    await expectProblem(await get(`/orders/${orderId}/files/${file.id}/preview?${query}`), status, code);
  });

  it("is refused like a download: binary, refunded, another buyer's, no such file", async () => {
    const binary = await fileNamed("archive.bin");
    await expectProblem(
      await get(`/orders/${orderId}/files/${binary.id}/preview`),
      404,
      "preview_not_available",
      /binary/,
    );
    const refunded = (await (await get(`/orders/${refundedOrderId}`)).json()) as { files: ApiFile[] };
    await expectProblem(
      await get(`/orders/${refundedOrderId}/files/${refunded.files[0]!.id}/preview`),
      409,
      "order_not_delivered",
      /refunded/,
    );
    const file = await fileNamed("products.csv");
    await expectProblem(await get(`/orders/${orderId}/files/${file.id}/preview`, otherKey), 404, "order_not_found");
    await expectProblem(await get(`/orders/${orderId}/files/fil_${"0".repeat(32)}/preview`), 404, "file_not_found");
  });
});

describe("formats", () => {
  it("serves the Parquet rendition verified by its own sha256, with the file's columns and rows", async () => {
    for (const name of ["products.csv", "products.json", "products.csv.gz"]) {
      const file = await fileNamed(name);
      const bytes = await download(file, "parquet");
      expect(sha256(bytes)).toBe(file.renditions.find((r) => r.format === "parquet")!.sha256);
      expect(await readParquet(bytes)).toEqual({ columns: PRODUCT_COLUMNS, rows: PRODUCT_ROWS });
    }
  });

  it("makes CSV and JSON Lines on first request (202 with Retry-After until ready), then keeps them", async () => {
    const file = await fileNamed("products.parquet");
    for (const format of ["csv", "jsonl"]) {
      const first = await get(`/orders/${orderId}/files/${file.id}?format=${format}`);
      expect(first.status).toBe(202);
      expect(Number(first.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await first.json()) as { code: string }).code).toBe("rendition_pending");
      await waitFor(
        async () =>
          (await db().fileRendition.count({ where: { fileId: file.id, format: format as "csv", status: "ready" } })) ===
          1,
        120_000,
        `the ${format} rendition`,
      );
      const made = (await fileNamed("products.parquet", true)).renditions.find((r) => r.format === format)!;
      const bytes = await download(file, format);
      expect(made).toMatchObject({ status: "ready", size: bytes.length, sha256: sha256(bytes) });
      const text = bytes.toString("utf8");
      if (format === "csv") expect(text.split("\n")[0]).toBe(PRODUCT_COLUMNS.join(","));
      else expect(JSON.parse(text.split("\n")[0]!)).toMatchObject({ id: 1, name: 'Product 1, "deluxe"' });
      expect(text.trim().split("\n")).toHaveLength(format === "csv" ? PRODUCT_ROWS + 1 : PRODUCT_ROWS);
    }
  });

  it("gives the original for the file's own format", async () => {
    const file = await fileNamed("products.csv");
    expect(sha256(await download(file, "csv"))).toBe(file.sha256);
  });

  it.each([
    ["format=xml", 400, "invalid_request"],
    ["format=", 400, "invalid_request"],
  ])("refuses %s", async (query, status, code) => {
    const file = await fileNamed("products.csv");
    await expectProblem(await get(`/orders/${orderId}/files/${file.id}?${query}`), status, code);
  });

  it("has no rendition of a binary file", async () => {
    const file = await fileNamed("archive.bin");
    await expectProblem(await get(`/orders/${orderId}/files/${file.id}?format=parquet`), 404, "preview_not_available");
  });
});
