import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setOrderStatus } from "../../lib/operator/orders";
import { createShareLink, revokeShareLink } from "../../lib/share-links";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { callServerAction, serverActionId, sessionCookie } from "../helpers/server-action";
import { startServer, type TestServer } from "../helpers/server";
import { products, productsCsv, publicationDone } from "../tables/helpers";

/**
 * The Query page's action and download, and the filter bars' actions of the order page and the
 * share page, over HTTP against the production server on a real PostgreSQL: what each answers,
 * whose orders each reaches (the session's, or the share link's one order), the history they keep.
 */
const QUERY_ACTIONS = "app/(dashboard)/orders/[id]/query/actions.ts";
const ORDER_ACTIONS = "app/(dashboard)/orders/[id]/preview-action.ts";
const SHARE_ACTIONS = "app/share/[token]/preview-action.ts";

let env: TestEnvironment;
let server: TestServer;
let ids: { query: string; filter: string; shared: string };
let owner: { id: string; cookie: string; orderId: string; refundedId: string };
let stranger: { id: string; cookie: string };

type Answer = {
  ok: boolean;
  error?: string;
  code?: string;
  result?: { columns: { name: string; type: string }[]; rows: unknown[][]; truncated: boolean };
  page?: { version: number; columns: { name: string }[]; rows: unknown[][]; next_offset: number | null };
  history?: { sql: string; rows: number | null; error: string | null }[];
};

beforeAll(async () => {
  env = await createTestEnvironment("query_page");
  const account = await buyer("query-owner");
  const other = await buyer("query-stranger");
  const delivered = await order(account.id, { name: "Products" });
  const refunded = await order(account.id, { name: "Refunded" });
  // The server's worker publishes the tables.
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
  for (const target of [delivered.id, refunded.id]) {
    const published = await publishTable({
      orderId: target,
      table: "products",
      key: ["id"],
      parts: [{ name: "products.csv", source: { stream: Readable.from([productsCsv(products(1, 30))]) } }],
    });
    expect(await publicationDone(published.publication, 240_000)).toMatchObject({ status: "ready" });
  }
  await setOrderStatus(refunded.id, "refunded");
  owner = { id: account.id, cookie: await sessionCookie(account.id), orderId: delivered.id, refundedId: refunded.id };
  stranger = { id: other.id, cookie: await sessionCookie(other.id) };
  ids = {
    query: await serverActionId(QUERY_ACTIONS, "runQueryAction"),
    filter: await serverActionId(ORDER_ACTIONS, "filterTableAction"),
    shared: await serverActionId(SHARE_ACTIONS, "sharedFilterTableAction"),
  };
}, 360_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const runQuery = (cookie: string, orderId: string, sql: unknown, limit: unknown = 100) =>
  callServerAction<Answer>(server, {
    // The page is a real one (a malformed id's page is a 404); the action reads the id it is sent.
    page: `/orders/${owner.orderId}/query`,
    actionId: ids.query,
    cookie,
    args: [orderId, sql, limit],
  });

/** A Parquet file's column names and types and its rows, read back by DuckDB in this process. */
async function readParquet(bytes: Buffer): Promise<{ columns: string[][]; rows: unknown[][] }> {
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "query-parquet-")), "result.parquet");
  await fs.writeFile(file, bytes);
  const connection = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
    const rows = await connection.runAndReadAll(`SELECT * FROM read_parquet('${file}')`);
    return {
      columns: described.getRowsJson().map((row) => [String(row[0]), String(row[1])]),
      rows: rows.getRowsJson() as unknown[][],
    };
  } finally {
    connection.closeSync();
    await fs.rm(path.dirname(file), { recursive: true, force: true });
  }
}

const download = (cookie: string | undefined, orderId: string, fields: Record<string, string>, origin = server.url) =>
  fetch(`${server.url}/orders/${orderId}/query/result`, {
    method: "POST",
    headers: { ...(cookie ? { Cookie: cookie } : {}), Origin: origin },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

describe("the Query page's action", { timeout: 60_000 }, () => {
  it("runs the buyer's SELECT, answers the grid and keeps it in the history, a refusal too", async () => {
    const sql = 'SELECT id, price FROM "products" WHERE id > 27 ORDER BY id';
    const ran = await runQuery(owner.cookie, owner.orderId, sql);
    expect(ran).toMatchObject({
      ok: true,
      result: {
        rows: [
          [28, 42],
          [29, 43.5],
          [30, 45],
        ],
        truncated: false,
      },
    });
    expect(ran.result!.columns.map((column) => column.name)).toEqual(["id", "price"]);
    expect(ran.history![0]).toMatchObject({ sql, rows: 3, error: null });

    const cut = await runQuery(owner.cookie, owner.orderId, 'SELECT id FROM "products"', 10);
    expect(cut).toMatchObject({ ok: true, result: { truncated: true } });
    expect(cut.result!.rows).toHaveLength(10);

    const refused = await runQuery(owner.cookie, owner.orderId, "COPY products TO '/tmp/out.csv'");
    expect(refused).toMatchObject({ ok: false, code: "invalid_sql" });
    // The page's one text box is not named by the API's parameter (q): the refusal is a sentence.
    expect(refused.error).toMatch(/^Only one read-only query is allowed/);
    expect(refused.history![0]).toMatchObject({
      sql: "COPY products TO '/tmp/out.csv'",
      rows: null,
      error: refused.error,
    });
  });

  it("shares its engine pool with the API, whose refusals stay 4xx whichever started the pool", async () => {
    // Run first in this file, the page's action started the query pool: the API (the launcher's own
    // copy of lib/) gets the errors of the pool the page's copy (Next.js's bundle) made.
    const key = (await apiKey(owner.id)).secret;
    const response = await fetch(
      `${server.url}/api/v1/orders/${owner.orderId}/sql?${new URLSearchParams({ q: "SELECT nope FROM products" })}`,
      { headers: { Authorization: `Bearer ${key}` } },
    );
    const text = await response.text();
    expect(response.status, text).toBe(400);
    expect(JSON.parse(text)).toMatchObject({ code: "invalid_sql", detail: expect.stringMatching(/nope/) });
  });

  it.each([
    ["no text", "", 100, "Write a SELECT to run."],
    ["a text over 8,000 characters", `SELECT 1 -- ${"x".repeat(8000)}`, 100, "A query has at most 8,000 characters."],
    ["no rows", "SELECT 1", 0, "Show between 1 and 1000 rows."],
    ["too many rows", "SELECT 1", 1001, "Show between 1 and 1000 rows."],
    ["rows as text", "SELECT 1", "10", "Show between 1 and 1000 rows."],
  ])("refuses %s before anything runs", async (_, sql, limit, error) => {
    expect(await runQuery(owner.cookie, owner.orderId, sql, limit)).toEqual({ ok: false, error });
  });

  it("reaches only the session's own delivered orders and records nothing for another's", async () => {
    const foreign = await runQuery(stranger.cookie, owner.orderId, 'SELECT count(*) FROM "products"');
    expect(foreign).toMatchObject({ ok: false, code: "order_not_found" });
    expect(foreign.history).toBeUndefined();
    const malformed = await runQuery(owner.cookie, "ord_../x", "SELECT 1");
    expect(malformed).toMatchObject({ ok: false, code: "order_not_found" });
    const refunded = await runQuery(owner.cookie, owner.refundedId, 'SELECT count(*) FROM "products"');
    expect(refunded).toMatchObject({ ok: false, code: "order_not_delivered" });
    const signedOut = await runQuery("next-auth.session-token=nobody", owner.orderId, "SELECT 1");
    expect(signedOut).toEqual({ ok: false, error: "Your session has ended. Sign in again." });
  });
});

describe("the Query page's download", { timeout: 60_000 }, () => {
  const sql = 'SELECT id, name FROM "products" WHERE id <= 2 ORDER BY id';

  it("is the result as CSV or JSON, for the session's own order", async () => {
    const csv = await download(owner.cookie, owner.orderId, { sql, format: "csv" });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(csv.headers.get("content-disposition")).toBe('attachment; filename="query-result.csv"');
    expect(await csv.text()).toBe("id,name\r\n1,Product 1\r\n2,Product 2\r\n");
    const json = await download(owner.cookie, owner.orderId, { sql, format: "json" });
    expect(await json.json()).toEqual({
      columns: [
        { name: "id", type: "BIGINT" },
        { name: "name", type: "VARCHAR" },
      ],
      rows: [
        { id: 1, name: "Product 1" },
        { id: 2, name: "Product 2" },
      ],
      truncated: false,
    });
  });

  it("is the result as Parquet written by the engine, with the columns' types, and says when rows were left out", async () => {
    const parquet = await download(owner.cookie, owner.orderId, {
      sql: 'SELECT price, id, name FROM "products" ORDER BY id DESC',
      format: "parquet",
    });
    expect(parquet.status).toBe(200);
    expect(parquet.headers.get("content-type")).toBe("application/vnd.apache.parquet");
    expect(parquet.headers.get("content-disposition")).toBe('attachment; filename="query-result.parquet"');
    expect(parquet.headers.get("x-result-truncated")).toBe("false");
    const read = await readParquet(Buffer.from(await parquet.arrayBuffer()));
    expect(read.columns).toEqual([
      ["price", "DOUBLE"],
      ["id", "BIGINT"],
      ["name", "VARCHAR"],
    ]);
    expect(read.rows).toHaveLength(30);
    expect(read.rows.slice(0, 2)).toEqual([
      [45, "30", "Product 30"],
      [43.5, "29", "Product 29"],
    ]);
    // Past the download's 1,000 rows: the first 1,000, and the header says more exist.
    const cut = await download(owner.cookie, owner.orderId, {
      sql: "SELECT range AS n FROM range(1500)",
      format: "parquet",
    });
    expect(cut.headers.get("x-result-truncated")).toBe("true");
    expect((await readParquet(Buffer.from(await cut.arrayBuffer()))).rows).toHaveLength(1000);
  });

  it.each([
    [
      "a refused query as Parquet",
      () => download(owner.cookie, owner.orderId, { sql: "COPY products TO 'x'", format: "parquet" }),
      400,
    ],
    [
      "another buyer's order as Parquet",
      () => download(stranger.cookie, owner.orderId, { sql, format: "parquet" }),
      404,
    ],
    [
      "another site's form",
      () => download(owner.cookie, owner.orderId, { sql, format: "csv" }, "https://evil.example"),
      403,
    ],
    ["no session", () => download(undefined, owner.orderId, { sql, format: "csv" }), 401],
    ["another buyer's order", () => download(stranger.cookie, owner.orderId, { sql, format: "csv" }), 404],
    ["a format it does not make", () => download(owner.cookie, owner.orderId, { sql, format: "xlsx" }), 400],
    ["no query", () => download(owner.cookie, owner.orderId, { format: "csv" }), 400],
    ["a refused query", () => download(owner.cookie, owner.orderId, { sql: "ATTACH 'x.db'", format: "csv" }), 400],
    ["a refunded order", () => download(owner.cookie, owner.refundedId, { sql, format: "csv" }), 409],
  ])("refuses %s", async (_, send, status) => {
    const answer = await send();
    expect(answer.status).toBe(status);
    expect(answer.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await answer.text()).not.toContain("Product");
  });
});

describe("the filter bars' actions", { timeout: 60_000 }, () => {
  const filter = (cookie: string, orderId: string, asked: unknown) =>
    callServerAction<Answer>(server, {
      page: `/orders/${orderId}`,
      actionId: ids.filter,
      cookie,
      args: [orderId, "products", asked],
    });
  const sharedFilter = (token: string, asked: unknown) =>
    callServerAction<Answer>(server, {
      page: `/share/${token}`,
      actionId: ids.shared,
      cookie: "",
      args: [token, "products", asked],
    });

  it("answers the chosen columns of the matching rows, page by page, and the server's precise refusals", async () => {
    const first = await filter(owner.cookie, owner.orderId, { columns: ["name", "id"], where: "id >= 5" });
    expect(first.page).toMatchObject({ version: 1, columns: [{ name: "name" }, { name: "id" }], next_offset: 20 });
    expect(first.page!.rows[0]).toEqual(["Product 5", 5]);
    const next = await filter(owner.cookie, owner.orderId, { where: "id >= 5", offset: 20 });
    expect(next.page!.rows.map((row) => row[0])).toEqual([25, 26, 27, 28, 29, 30]);
    expect(next.page!.next_offset).toBeNull();
    for (const [asked, code, named] of [
      [{ where: "id = (SELECT 1)" }, "invalid_filter", /subquery/],
      [{ where: "nope = 1" }, "unknown_column", /"nope"/],
      [{ columns: ["id", "nope"] }, "unknown_column", /"nope"/],
    ] as const) {
      const refused = await filter(owner.cookie, owner.orderId, asked);
      expect(refused, JSON.stringify(asked)).toMatchObject({ ok: false, code });
      expect(refused.error).toMatch(named);
    }
    expect(await filter(owner.cookie, owner.orderId, { where: 5 })).toEqual({
      ok: false,
      error: "That filter was not valid.",
    });
    expect(await filter(stranger.cookie, owner.orderId, { where: "id = 1" })).toMatchObject({
      ok: false,
      code: "order_not_found",
    });
  });

  it("on a share page reaches the link's one order while the link works", async () => {
    const link = await createShareLink({ buyerId: owner.id, orderId: owner.orderId, expiry: 7 });
    const shared = await sharedFilter(link.token, { where: "id = 7", columns: ["name"] });
    expect(shared.page).toMatchObject({ rows: [["Product 7"]], next_offset: null });
    await revokeShareLink(owner.id, link.id);
    expect(await sharedFilter(link.token, { where: "id = 7" })).toEqual({
      ok: false,
      error: "This share link no longer works. Reload the page to see why.",
    });
  });
});
