import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { revokeApiKey } from "../../lib/keys";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { withoutQualityChecks } from "../tables/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";

/**
 * The MCP server (contract Part 7) on the production server, through the SDK's own client: the
 * tools listed with their schemas, each tool called, its errors as tool results, the tenant
 * boundary, revocation at the next request, the HTTP refusals of issue 42's bad input, the rate
 * limit, usage and metrics, and a second instance answering a session the first began. Each
 * account makes fewer than 60 requests, except the one that proves the limit.
 */

let env: TestEnvironment;
let server: TestServer;
const METRICS_TOKEN = "mcp-metrics-token";
const f = {} as {
  keyA: string;
  keyAId: string;
  keyB: string;
  keyHttp: string;
  revocable: { id: string; secret: string; buyerId: string };
  limited: string;
  orderA: string;
  orderB: string;
  fileA: string;
  fileBytes: Buffer;
};

const csv = (rows: [number, string, number][]) => `id,name,price\n${rows.map((row) => row.join(",")).join("\n")}\n`;
const publish = async (orderId: string, content: string, name: string) => {
  await publishTable({
    orderId,
    table: "products",
    key: ["id"],
    parts: [{ name, source: { stream: Readable.from([Buffer.from(content)]) } }],
  });
  await processPendingNow();
};

beforeAll(async () => {
  env = await createTestEnvironment("mcp");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  const [a, b, c, d, e] = await Promise.all(["a", "b", "c", "d", "e"].map((label) => buyer(`mcp-${label}`)));
  f.fileBytes = Buffer.from("a plain delivered file\n");
  const orderA = await order(a!.id, { name: "Prices", files: { "readme.txt": f.fileBytes } });
  f.orderA = orderA.id;
  f.fileA = orderA.files[0]!.id;
  f.orderB = (await order(b!.id)).id;
  await publish(
    f.orderA,
    csv([
      [1, "mug", 3],
      [2, "plate", 4],
      [3, "bowl", 5],
    ]),
    "v1.csv",
  );
  // Version 2 deletes a third of the rows, which the quality gate would hold: its checks are off here.
  await withoutQualityChecks(f.orderA, "products");
  await publish(
    f.orderA,
    csv([
      [1, "mug", 3],
      [2, "plate", 6],
      [4, "cup", 2],
    ]),
    "v2.csv",
  );
  await publish(f.orderB, csv([[9, "secret", 1]]), "b.csv");
  const table = await db().orderTable.findFirstOrThrow({ where: { orderId: f.orderA, name: "products" } });
  const old = new Date(Date.now() - 100 * 86_400_000);
  await db().tableNotice.createMany({
    data: [
      { tableId: table.id, type: "delay", message: "Next refresh a day late." },
      { tableId: table.id, type: "deprecation", message: "An old notice.", createdAt: old },
    ],
  });
  const keyA = await apiKey(a!.id);
  f.keyA = keyA.secret;
  f.keyAId = keyA.id;
  f.keyB = (await apiKey(b!.id)).secret;
  f.keyHttp = (await apiKey(c!.id)).secret;
  const revocable = await apiKey(d!.id);
  f.revocable = { id: revocable.id, secret: revocable.secret, buyerId: d!.id };
  f.limited = (await apiKey(e!.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", METRICS_TOKEN, USAGE_FLUSH_INTERVAL_MS: "200" },
  });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

async function connect(key: string, url = server.url): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const headers = { Authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/api/mcp`), { requestInit: { headers } }));
  return client;
}

const textOf = (result: Awaited<ReturnType<Client["callTool"]>>) =>
  (result.content as { type: string; text: string }[]).map((item) => item.text).join("\n");

describe("the tools, through the SDK's client", () => {
  let client: Client;
  beforeAll(async () => {
    client = await connect(f.keyA);
  });
  afterAll(async () => client?.close());

  it("lists six tools, each with a description and input and output schemas", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      ["describe_table", "download_link", "get_changes", "get_order", "list_orders", "query"].sort(),
    );
    for (const tool of tools) {
      expect(tool.description!.length, tool.name).toBeGreaterThan(80);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      expect(tool.annotations?.readOnlyHint).toBe(true);
    }
    expect(client.getServerVersion()?.name).toBe("dataset-access");
  });

  it("list_orders: the account's orders only, with a text table", async () => {
    const result = await client.callTool({ name: "list_orders", arguments: {} });
    const { orders, next_offset } = result.structuredContent as {
      orders: { id: string; tables: unknown[] }[];
      next_offset: null;
    };
    expect(orders.map((o) => o.id)).toEqual([f.orderA]);
    expect(orders[0]!.tables).toEqual([{ name: "products", version: 2, rows: 3 }]);
    expect(next_offset).toBeNull();
    expect(textOf(result)).toContain(`| ${f.orderA} | Prices | delivered |`);
  });

  it("get_order: the Order with its files and tables", async () => {
    const result = await client.callTool({ name: "get_order", arguments: { order_id: f.orderA } });
    const order = result.structuredContent as { id: string; files: { id: string }[]; tables: { name: string }[] };
    expect(order.id).toBe(f.orderA);
    expect(order.files.map((file) => file.id)).toContain(f.fileA);
    expect(textOf(result)).toContain("readme.txt");
  });

  it("describe_table: columns, versions, quality report and the last 90 days' notices", async () => {
    const result = await client.callTool({
      name: "describe_table",
      arguments: { order_id: f.orderA, table: "products" },
    });
    expect(result.isError).toBeFalsy();
    const described = result.structuredContent as {
      table: { version: number; columns: { name: string }[] };
      versions: { version: number; changes: unknown }[];
      version_count: number;
      notices: { message: string }[];
      quality_report: unknown;
    };
    expect(described.table.version).toBe(2);
    expect(described.table.columns.map((column) => column.name)).toEqual(["id", "name", "price"]);
    expect(described.versions.map((v) => v.version)).toEqual([2, 1]);
    expect(described.versions[0]!.changes).toEqual({ inserted: 1, updated: 1, deleted: 1 });
    expect(described.version_count).toBe(2);
    expect(described.notices.map((notice) => notice.message)).toEqual(["Next refresh a day late."]);
    expect(described).toHaveProperty("quality_report");
    expect(textOf(result)).toMatch(/\| price \| BIGINT \| false \|/);
  });

  it("get_changes: counts per version and the change rows after a version", async () => {
    const result = await client.callTool({
      name: "get_changes",
      arguments: { order_id: f.orderA, table: "products", since_version: 1, limit: 10 },
    });
    const changes = result.structuredContent as {
      current_version: number;
      versions: { version: number }[];
      columns: { name: string }[];
      rows: unknown[][];
      truncated: boolean;
    };
    expect(changes.current_version).toBe(2);
    expect(changes.versions.map((v) => v.version)).toEqual([2]);
    const type = changes.columns.findIndex((column) => column.name === "_change_type");
    expect(changes.rows.map((row) => row[type]).sort()).toEqual(
      ["delete", "insert", "update_postimage", "update_preimage"].sort(),
    );
    expect(changes.rows.every((row) => row.at(-1) === 2)).toBe(true);
    expect(changes.truncated).toBe(false);
    const one = await client.callTool({
      name: "get_changes",
      arguments: { order_id: f.orderA, table: "products", since_version: 1, limit: 1 },
    });
    expect((one.structuredContent as { rows: unknown[]; truncated: boolean }).truncated).toBe(true);
  });

  it("query: one SELECT over the order's tables and their versions, truncated past the limit", async () => {
    const result = await client.callTool({
      name: "query",
      arguments: { order_id: f.orderA, sql: "SELECT name, price FROM products ORDER BY id", limit: 2 },
    });
    expect(result.isError).toBeFalsy();
    const answer = result.structuredContent as { columns: { name: string }[]; rows: unknown[][]; truncated: boolean };
    expect(answer.columns.map((column) => column.name)).toEqual(["name", "price"]);
    expect(answer.rows.map((row) => row.map(String))).toEqual([
      ["mug", "3"],
      ["plate", "6"],
    ]);
    expect(answer.truncated).toBe(true);
    expect(textOf(result)).toContain("| mug | 3 |");
    const old = await client.callTool({
      name: "query",
      arguments: { order_id: f.orderA, sql: "SELECT count(*) AS n FROM \"products@1\" WHERE name = 'bowl'" },
    });
    expect(String((old.structuredContent as { rows: unknown[][] }).rows[0]![0])).toBe("1");
  });

  it("download_link: a signed link to a file, and to every part of a table's version", async () => {
    const file = await client.callTool({ name: "download_link", arguments: { order_id: f.orderA, file_id: f.fileA } });
    const { links, expires_at } = file.structuredContent as { links: { url: string }[]; expires_at: string };
    expect(new Date(expires_at).getTime() - Date.now()).toBeGreaterThan(4 * 60_000);
    const bytes = Buffer.from(await (await fetch(links[0]!.url)).arrayBuffer());
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(
      createHash("sha256").update(f.fileBytes).digest("hex"),
    );
    const parts = await client.callTool({
      name: "download_link",
      arguments: { order_id: f.orderA, table: "products", version: 1 },
    });
    const partLinks = (parts.structuredContent as { links: { name: string; url: string }[] }).links;
    expect(partLinks.map((link) => link.name)).toEqual(["v1.csv"]);
    expect(await (await fetch(partLinks[0]!.url)).text()).toContain("bowl");
  });

  it.each([
    ["an unknown order", "get_order", { order_id: "ord_00000000000000000000000000000000" }, "order_not_found"],
    ["a malformed order id", "get_order", { order_id: "../etc" }, "order_not_found"],
    ["another buyer's order", "describe_table", { order_id: "ORDER_B", table: "products" }, "order_not_found"],
    ["an unknown table", "describe_table", { order_id: "ORDER_A", table: "nope" }, "table_not_found"],
    [
      "both file_id and table",
      "download_link",
      { order_id: "ORDER_A", file_id: "FILE_A", table: "products" },
      "invalid_request",
    ],
    [
      "a version that does not exist",
      "download_link",
      { order_id: "ORDER_A", table: "products", version: 9 },
      "version_not_found",
    ],
    [
      "another buyer's changes",
      "get_changes",
      { order_id: "ORDER_B", table: "products", since_version: 0 },
      "order_not_found",
    ],
    ["an argument of the wrong type", "get_order", { order_id: 5 }, "invalid_request"],
    ["a missing argument", "describe_table", { order_id: "ORDER_A" }, "invalid_request"],
    ["SQL that is not one SELECT", "query", { order_id: "ORDER_A", sql: "DROP TABLE products" }, "invalid_sql"],
    [
      "SQL on another buyer's order",
      "query",
      { order_id: "ORDER_B", sql: "SELECT * FROM products" },
      "order_not_found",
    ],
    [
      "a limit over 100",
      "get_changes",
      { order_id: "ORDER_A", table: "products", since_version: 0, limit: 101 },
      "invalid_request",
    ],
    // The bounds of the API's parameters (contract Part 8): versions 1..2^31-1, since_version 0..2^31-1.
    [
      "the largest version",
      "download_link",
      { order_id: "ORDER_A", table: "products", version: 2147483647 },
      "version_not_found",
    ],
    [
      "a version past 2^31-1",
      "download_link",
      { order_id: "ORDER_A", table: "products", version: 2147483648 },
      "invalid_request",
    ],
    [
      "a version of 2^53",
      "download_link",
      { order_id: "ORDER_A", table: "products", version: 9007199254740992 },
      "invalid_request",
    ],
    [
      "a since_version past 2^31-1",
      "get_changes",
      { order_id: "ORDER_A", table: "products", since_version: 9007199254740991 },
      "invalid_request",
    ],
    [
      "a since_version below 0",
      "get_changes",
      { order_id: "ORDER_A", table: "products", since_version: -1 },
      "invalid_request",
    ],
    // What a query reads is the binder's to say: DuckDB's catalog through a name a CTE's scope hides.
    [
      "SQL reading DuckDB's settings through a CTE's name",
      "query",
      {
        order_id: "ORDER_A",
        sql: "SELECT name, setting FROM (WITH pg_settings AS (SELECT 1) SELECT 1) t, pg_settings, (SELECT 1 FROM products LIMIT 1) p",
      },
      "invalid_sql",
    ],
    [
      "SQL reading the view definitions through a CTE's name",
      "query",
      {
        order_id: "ORDER_A",
        sql: "SELECT sql FROM (WITH duckdb_views AS (SELECT 1) SELECT 1) t, duckdb_views, (SELECT 1 FROM products) p",
      },
      "invalid_sql",
    ],
    [
      "SQL reading DuckDB's settings",
      "query",
      { order_id: "ORDER_A", sql: "SELECT * FROM duckdb_settings()" },
      "invalid_sql",
    ],
  ])("%s: a tool result with isError and the code", async (_, name, raw, code) => {
    const args = JSON.parse(
      JSON.stringify(raw).replaceAll("ORDER_A", f.orderA).replaceAll("ORDER_B", f.orderB).replaceAll("FILE_A", f.fileA),
    );
    const result = await client.callTool({ name, arguments: args });
    expect(result.isError).toBe(true);
    expect(textOf(result).startsWith(`${code}: `), textOf(result)).toBe(true);
    expect(textOf(result)).not.toContain("secret");
    // No server path, process id or setting in any answer.
    expect(textOf(result)).not.toMatch(/\/tmp\/|storage|kept-\d+|allowed_paths/);
  });

  it.each([
    [
      "get_order",
      { order_id: 5 },
      "invalid_request: Invalid order_id: Invalid input: expected string, received number.",
    ],
    ["describe_table", { order_id: "ORDER_A" }, "invalid_request: Invalid table: required."],
    [
      "get_changes",
      { order_id: "ORDER_A", table: "products", since_version: 0, limit: 101 },
      "invalid_request: Invalid limit: Too big: expected number to be <=100.",
    ],
    [
      "download_link",
      { order_id: "ORDER_A", table: "products", version: 2147483648 },
      "invalid_request: Invalid version: version must be a whole number from 1 to 2147483647.",
    ],
    [
      "get_changes",
      { order_id: "ORDER_A", table: "products", since_version: 9007199254740991 },
      "invalid_request: Invalid since_version: since_version must be a whole number from 0 to 2147483647.",
    ],
    // The query tool's SQL is its argument sql, not the API's parameter q.
    [
      "query",
      { order_id: "ORDER_A", sql: "DROP TABLE products" },
      "invalid_sql: sql: only one read-only query is allowed (a SELECT, or WITH … SELECT): nothing that writes, attaches, installs, loads, creates or sets.",
    ],
  ])("wrong arguments of %s are named as /api/v1 names a bad parameter", async (name, raw, text) => {
    const args = JSON.parse(JSON.stringify(raw).replaceAll("ORDER_A", f.orderA));
    const result = await client.callTool({ name, arguments: args });
    expect(result).toMatchObject({ isError: true, content: [{ type: "text", text }] });
  });

  it("an unknown tool is a JSON-RPC error (-32602), not a tool result", async () => {
    await expect(client.callTool({ name: "drop_everything", arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  it("counts its requests in the key's usage and its metrics under the route name mcp", async () => {
    await waitFor(
      async () =>
        ((await db().apiKeyUsage.aggregate({ where: { keyId: f.keyAId }, _sum: { count: true } }))._sum.count ?? 0) >=
        10,
      10_000,
      "the key's usage to count the MCP requests",
    );
    const metrics = await fetch(`${server.url}/api/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(await metrics.text()).toMatch(/route="mcp"/);
  });
});

describe("the key", () => {
  it("another buyer's key sees none of its orders", async () => {
    const client = await connect(f.keyB);
    const result = await client.callTool({ name: "get_order", arguments: { order_id: f.orderA } });
    expect(textOf(result)).toMatch(/^order_not_found/);
    const listed = (await client.callTool({ name: "list_orders", arguments: {} })).structuredContent as {
      orders: { id: string }[];
    };
    expect(listed.orders.map((o) => o.id)).toEqual([f.orderB]);
    await client.close();
  });

  it("a revoked key is refused at its next request", async () => {
    const client = await connect(f.revocable.secret);
    expect((await client.callTool({ name: "list_orders", arguments: {} })).isError).toBeFalsy();
    await revokeApiKey(f.revocable.id, { buyerId: f.revocable.buyerId });
    await expect(client.callTool({ name: "list_orders", arguments: {} })).rejects.toThrow(/401|revoked/i);
  });
});
