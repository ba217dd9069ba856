import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { filesOfRun } from "../../lib/exports/files";
import { createShareLink } from "../../lib/share-links";
import { tableHistory } from "../../lib/tables/admin";
import { publishTable } from "../../lib/tables/publish";
import { rejectPublication, releasePublication } from "../../lib/tables/quality-admin";
import { runCli, buildTypeScriptClient } from "../clients/cli";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { products, productsCsv, publicationDone } from "./helpers";

/**
 * Unseen until released (contract Part 8), through every door of the production server and its
 * worker: a part of a publication that is processing (waiting behind a held one, its profile and
 * Parquet rendition made), held, failed and rejected is absent from the order and its list, 404
 * file_not_found by id (download in each format, preview) with no rendition queued, absent from
 * the share page and its downloads, from MCP get_order and download_link, from exports, Delta
 * Sharing and the TypeScript client's sync; released, the parts are served everywhere at once.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let key: string;
let orderId: string;
let shareToken: string;
let mcp: Client;

type Part = { id: string; name: string; publication: string };
const parts = {} as Record<"processing" | "held" | "failed" | "rejected" | "v1", Part>;

async function publish(table: string, name: string, rows: ReturnType<typeof products>): Promise<Part> {
  const published = await publishTable({
    orderId,
    table,
    key: ["id"],
    parts: [
      {
        name,
        source: { stream: Readable.from([Buffer.from(productsCsv(rows))]) },
      },
    ],
  });
  return {
    id: published.files[0]!.id,
    name,
    publication: published.publication,
  };
}

async function judged(part: Part, status: "ready" | "held" | "failed") {
  expect(await publicationDone(part.publication, 240_000)).toMatchObject({
    status,
  });
}

const api = (pathAndQuery: string) =>
  fetch(`${server.url}/api/v1${pathAndQuery}`, {
    headers: { Authorization: `Bearer ${key}` },
    redirect: "manual",
  });
const page = (pathAndQuery: string) => fetch(`${server.url}${pathAndQuery}`, { redirect: "manual" });

async function listedIds(): Promise<string[]> {
  const listed = (await (await api(`/orders/${orderId}`)).json()) as {
    files: { id: string }[];
  };
  const inList = (await (await api("/orders")).json()) as {
    data: { id: string; files: { id: string }[] }[];
  };
  const fromList = inList.data.find((one) => one.id === orderId)!.files.map((file) => file.id);
  expect(fromList).toEqual(listed.files.map((file) => file.id));
  return fromList;
}

async function mcpOrderIds(): Promise<string[]> {
  const result = await mcp.callTool({
    name: "get_order",
    arguments: { order_id: orderId },
  });
  return (result.structuredContent as { files: { id: string }[] }).files.map((file) => file.id);
}

async function mcpLink(fileId: string) {
  const result = await mcp.callTool({
    name: "download_link",
    arguments: { order_id: orderId, file_id: fileId },
  });
  const text = (result.content as { text: string }[]).map((item) => item.text).join("\n");
  return {
    isError: result.isError === true,
    text,
    structured: result.structuredContent as { links?: { url: string }[] },
  };
}

/** The Delta Sharing answer for the table's current version: its version and each file's rows. */
async function sharedTable(table: string): Promise<{ version: string | null; rows: number[] }> {
  const response = await fetch(
    `${server.url}/api/delta-sharing/shares/orders/schemas/${orderId}/tables/${table}/query`,
    {
      method: "POST",
      headers: {
        Authorization: `Bearer ${key}`,
        "Content-Type": "application/json",
      },
      body: "{}",
    },
  );
  expect(response.status).toBe(200);
  const lines = (await response.text())
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { file?: { stats: string } });
  return {
    version: response.headers.get("delta-table-version"),
    rows: lines.flatMap((line) =>
      line.file ? [(JSON.parse(line.file.stats) as { numRecords: number }).numRecords] : [],
    ),
  };
}

async function sync(dir: string): Promise<string[]> {
  const run = await runCli(["sync", "--dir", dir, "--json"], {
    DATASET_ACCESS_URL: server.url,
    DATASET_ACCESS_KEY: key,
  });
  expect(run.code, run.stderr).toBe(0);
  return (await fs.readdir(path.join(dir, orderId))).sort();
}

beforeAll(async () => {
  env = await createTestEnvironment("unseen");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "unseen-"));
  const account = await buyer("unseen");
  key = (await apiKey(account.id)).secret;
  orderId = (await order(account.id, { name: "Refreshed daily" })).id;
  shareToken = (await createShareLink({ buyerId: account.id, orderId, expiry: 7 })).token;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      RATE_LIMIT_EXEMPT_BUYERS: account.id,
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
    },
  });
  await buildTypeScriptClient();

  // products: version 1, then a refresh that loses 2/3 of its rows (held), then one waiting behind it.
  parts.v1 = await publish("products", "products-1.csv", products(1, 300));
  await judged(parts.v1, "ready");
  parts.held = await publish("products", "products-2.csv", products(1, 100));
  await judged(parts.held, "held");
  parts.processing = await publish("products", "products-3.csv", products(1, 295));
  // Its part profiled and made Parquet: everything but its turn, the worst case for a door.
  await waitFor(
    async () =>
      (await db().fileRendition.count({
        where: {
          fileId: parts.processing.id,
          format: "parquet",
          status: "ready",
        },
      })) === 1,
    240_000,
    "the waiting publication's Parquet rendition",
  );
  // rejected: held, then rejected by the operator; failed: a key found twice.
  await judged(await publish("prices", "prices-1.csv", products(1, 300)), "ready");
  parts.rejected = await publish("prices", "prices-2.csv", products(1, 50));
  await judged(parts.rejected, "held");
  await rejectPublication(parts.rejected.publication, "A broken scrape.");
  parts.failed = await publish("stock", "stock-1.csv", [...products(1, 5), ...products(1, 1)]);
  await judged(parts.failed, "failed");

  mcp = new Client({ name: "unseen-test", version: "1.0.0" });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/api/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
}, 600_000);

afterAll(async () => {
  await mcp?.close();
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const UNSEEN = ["processing", "held", "failed", "rejected"] as const;
const FORMATS = ["", "?format=csv", "?format=jsonl", "?format=parquet"];

describe("a part of a publication that is no version", { timeout: 300_000 }, () => {
  it("is still in its state (processing behind the held one, held, failed, rejected)", async () => {
    const statuses = await Promise.all(
      UNSEEN.map(
        async (state) =>
          (
            await db().tablePublication.findUniqueOrThrow({
              where: { id: parts[state].publication },
            })
          ).status,
      ),
    );
    expect(statuses).toEqual(["processing", "held", "failed", "failed"]);
  });

  it.each(UNSEEN)("%s: absent from the order, the order list and MCP get_order", async (state) => {
    const ids = await listedIds();
    expect(ids).toContain(parts.v1.id);
    expect(ids).not.toContain(parts[state].id);
    expect(await mcpOrderIds()).not.toContain(parts[state].id);
  });

  it.each(UNSEEN)(
    "%s: 404 file_not_found by id, in each format and as a preview; no rendition queued",
    async (state) => {
      const { id } = parts[state];
      for (const format of FORMATS) {
        await expectProblem(await api(`/orders/${orderId}/files/${id}${format}`), 404, "file_not_found");
      }
      await expectProblem(await api(`/orders/${orderId}/files/${id}/preview`), 404, "file_not_found");
      expect(
        await db().fileRendition.count({
          where: { fileId: id, format: { in: ["csv", "jsonl"] } },
        }),
      ).toBe(0);
    },
  );

  it.each(UNSEEN)("%s: not on the share page, not downloadable through it", async (state) => {
    const { id, name } = parts[state];
    const html = await (await page(`/share/${shareToken}`)).text();
    expect(html).toContain(parts.v1.name);
    expect(html).not.toContain(name);
    expect(html).not.toContain(id);
    for (const format of FORMATS) expect((await page(`/share/${shareToken}/files/${id}${format}`)).status).toBe(404);
  });

  it.each(UNSEEN)("%s: MCP download_link is a tool error file_not_found", async (state) => {
    const link = await mcpLink(parts[state].id);
    expect(link.isError).toBe(true);
    expect(link.text).toMatch(/^file_not_found: /);
  });

  it("none is exported, shared over Delta Sharing or synced; the operator sees each in table:versions", async () => {
    const exported = (await filesOfRun({ orderId, trigger: "manual" })).map((file) => file.id);
    expect(exported).toContain(parts.v1.id);
    for (const state of UNSEEN) expect(exported).not.toContain(parts[state].id);
    const shared = await sharedTable("products");
    expect(shared).toEqual({ version: "1", rows: [300] });
    expect(await sync(path.join(workDir, "mirror-before"))).toEqual(["prices-1.csv", "products-1.csv"]);
    const history = await tableHistory(orderId, "products");
    for (const state of ["processing", "held"] as const) {
      expect(history.publications.find((publication) => publication.id === parts[state].publication)?.files).toEqual([
        {
          id: parts[state].id,
          name: parts[state].name,
          size: expect.any(Number),
        },
      ]);
    }
  });
});

describe("released", { timeout: 600_000 }, () => {
  it("the held part and the one waiting behind it become versions, served by every door at once", async () => {
    await releasePublication(parts.held.publication, "The seller confirmed the catalog shrank.");
    expect(await publicationDone(parts.held.publication, 240_000)).toMatchObject({ status: "ready", version: 2 });
    expect(await publicationDone(parts.processing.publication, 240_000)).toMatchObject({ status: "ready", version: 3 });
    const current = parts.processing;

    expect(await listedIds()).toContain(current.id);
    expect(await mcpOrderIds()).toContain(current.id);
    // Version 2's part is superseded by version 3 in the list, and downloadable by id as any older version's.
    for (const { id } of [current, parts.held]) {
      expect((await api(`/orders/${orderId}/files/${id}`)).status).toBe(302);
      expect((await api(`/orders/${orderId}/files/${id}?format=parquet`)).status).toBe(302);
      expect((await api(`/orders/${orderId}/files/${id}/preview`)).status).toBe(200);
      expect((await page(`/share/${shareToken}/files/${id}`)).status).toBe(302);
      const link = await mcpLink(id);
      expect(link.isError, link.text).toBe(false);
      expect((await fetch(link.structured.links![0]!.url)).status).toBe(200);
    }
    expect(await (await page(`/share/${shareToken}`)).text()).toContain(current.name);
    expect((await filesOfRun({ orderId, trigger: "manual" })).map((file) => file.id)).toContain(current.id);
    const shared = await sharedTable("products");
    expect(shared).toEqual({ version: "3", rows: [295] });
    expect(await sync(path.join(workDir, "mirror-after"))).toEqual(["prices-1.csv", "products-3.csv"]);

    // The failed and the rejected parts stay unseen.
    for (const state of ["failed", "rejected"] as const) {
      expect(await listedIds()).not.toContain(parts[state].id);
      await expectProblem(await api(`/orders/${orderId}/files/${parts[state].id}`), 404, "file_not_found");
    }
  });
});
