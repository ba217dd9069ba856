import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tableSchema, versionPageSchema, versionSchema } from "../../lib/schemas/api";
import { setOrderStatus } from "../../lib/operator/orders";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { withoutQualityChecks } from "../tables/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";

/**
 * Tables, versions and change files over HTTP (contract Part 4) on the production server: the
 * answers' fields, paging, every error code of these routes, the tenant boundary (another buyer's
 * order, table or version reads as a missing one), and change files downloaded like files: 302 to
 * a signed link, 202 rendition_pending while a CSV or JSON Lines form is made.
 */

let env: TestEnvironment;
let server: TestServer;
const fixtures = {} as { keyA: string; keyB: string; orderA: string; orderB: string; refunded: string };

const csv = (rows: [number, string, number][]) => `id,name,price\n${rows.map((row) => row.join(",")).join("\n")}\n`;

async function publish(orderId: string, table: string, content: string, name: string) {
  await publishTable({
    orderId,
    table,
    key: ["id"],
    parts: [{ name, source: { stream: Readable.from([Buffer.from(content)]) } }],
  });
}

beforeAll(async () => {
  env = await createTestEnvironment("api_tables");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  const a = await buyer("tables-a");
  const b = await buyer("tables-b");
  fixtures.orderA = (await order(a.id)).id;
  fixtures.orderB = (await order(b.id)).id;
  const refunded = await order(a.id);
  fixtures.refunded = refunded.id;
  // Versions are made in this process (no worker runs it): publications in order, one at a time.
  await publish(
    fixtures.orderA,
    "products",
    csv([
      [1, "mug", 3],
      [2, "plate", 4],
      [3, "bowl", 5],
    ]),
    "products-v1.csv",
  );
  await processPendingNow();
  // Version 2 deletes one row of three on purpose: the quality gate (Part 6) is tested elsewhere.
  await withoutQualityChecks(fixtures.orderA, "products");
  await publish(
    fixtures.orderA,
    "products",
    csv([
      [1, "mug", 3],
      [2, "plate", 6],
      [4, "cup", 2],
    ]),
    "products-v2.csv",
  );
  await processPendingNow();
  await publish(fixtures.orderB, "products", csv([[9, "b", 1]]), "b.csv");
  await publish(fixtures.refunded, "products", csv([[7, "r", 1]]), "r.csv");
  await processPendingNow();
  await setOrderStatus(fixtures.refunded, "refunded");
  fixtures.keyA = (await apiKey(a.id)).secret;
  fixtures.keyB = (await apiKey(b.id)).secret;
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

function api(path: string, key = fixtures.keyA, init: RequestInit = {}) {
  return fetch(`${server.url}/api/v1${path}`, {
    redirect: "manual",
    ...init,
    headers: { Authorization: `Bearer ${key}` },
  });
}
const products = (orderId = fixtures.orderA) => `/orders/${orderId}/tables/products`;

describe("every JSON answer", () => {
  // PostgreSQL's json_build_object writes `{"name" : ...}`: the bytes sent are compact, like JSON.stringify's.
  it.each([
    ["the orders", () => "/orders"],
    ["an order", () => `/orders/${fixtures.orderA}`],
    ["a version's quality report", () => `${products()}/versions/2/quality`],
    ["a table", () => products()],
    ["the versions", () => `${products()}/versions`],
    ["a version", () => `${products()}/versions/1`],
  ])("%s: compact bytes", async (_, path) => {
    const response = await api(path());
    const body = await response.text();
    expect(response.status, body).toBe(200);
    expect(body).toBe(JSON.stringify(JSON.parse(body)));
  });
});

describe("a table", () => {
  it("reads with its current version, as the contract's Table", async () => {
    const response = await api(products());
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("private, no-store");
    expect(response.headers.get("ratelimit-policy")).toMatch(/datasets/);
    const table = tableSchema.strict().parse(await response.json());
    expect(table).toMatchObject({ name: "products", mode: "snapshot", key: ["id"], version: 2, rows: 3 });
    expect(table.columns!.map((column) => column.name)).toEqual(["id", "name", "price"]);
    const head = await api(products(), fixtures.keyA, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("answers order_not_found and table_not_found", async () => {
    await expectProblem(
      await api("/orders/ord_00000000000000000000000000000000/tables/products"),
      404,
      "order_not_found",
    );
    await expectProblem(await api(`/orders/${fixtures.orderA}/tables/nothing`), 404, "table_not_found");
    await expectProblem(await api(`/orders/${fixtures.orderA}/tables/Not-A-Name`), 404, "table_not_found");
  });
});

describe("versions", () => {
  it("page newest first as the order list, with exact next_offset", async () => {
    const first = versionPageSchema.parse(await (await api(`${products()}/versions?limit=1`)).json());
    expect(first.data.map((version) => version.version)).toEqual([2]);
    expect(first.next_offset).toBe(1);
    const second = versionPageSchema.parse(await (await api(`${products()}/versions?limit=1&offset=1`)).json());
    expect(second.data.map((version) => version.version)).toEqual([1]);
    expect(second.next_offset).toBeNull();
    const all = versionPageSchema.parse(await (await api(`${products()}/versions`)).json());
    expect(all.data.map((version) => version.version)).toEqual([2, 1]);
    for (const query of ["limit=0", "limit=51", "offset=-1", "limit=x"]) {
      await expectProblem(await api(`${products()}/versions?${query}`), 400, "invalid_request");
    }
    await expectProblem(await api(`/orders/${fixtures.orderA}/tables/nothing/versions`), 404, "table_not_found");
  });

  it("read one by one, with its changes and parts", async () => {
    const one = versionSchema.strict().parse(await (await api(`${products()}/versions/1`)).json());
    expect(one).toMatchObject({
      version: 1,
      mode: "snapshot",
      rows: 3,
      changes: { inserted: 3, updated: 0, deleted: 0 },
    });
    expect(one.files.map((file) => file.name)).toEqual(["products-v1.csv"]);
    const two = versionSchema.parse(await (await api(`${products()}/versions/2`)).json());
    expect(two.changes).toEqual({ inserted: 1, updated: 1, deleted: 1 });
    await expectProblem(await api(`${products()}/versions/3`), 404, "version_not_found");
    for (const version of ["0", "-1", "1.5", "x", "01"]) {
      await expectProblem(await api(`${products()}/versions/${version}`), 400, "invalid_request", /version/);
    }
  });

  it("never show another buyer's order, table or version", async () => {
    for (const path of [
      products(fixtures.orderB),
      `${products(fixtures.orderB)}/versions`,
      `${products(fixtures.orderB)}/versions/1`,
      `${products(fixtures.orderB)}/versions/1/changes`,
    ]) {
      await expectProblem(await api(path, fixtures.keyA), 404, "order_not_found");
    }
    await expectProblem(await api(`${products()}/versions/1`, fixtures.keyB), 404, "order_not_found");
    expect((await api(`${products(fixtures.orderB)}/versions/1`, fixtures.keyB)).status).toBe(200);
  });
});

describe("change files", () => {
  it("redirect to a signed link of the Parquet change file (the default)", async () => {
    const response = await api(`${products()}/versions/2/changes`);
    expect(response.status).toBe(302);
    expect(response.headers.get("cache-control")).toBe("private, no-store");
    const bytes = Buffer.from(await (await fetch(response.headers.get("location")!)).arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe("PAR1");
  });

  it("refuse a bad format, an unknown version, and an order no longer delivered", async () => {
    await expectProblem(await api(`${products()}/versions/2/changes?format=xml`), 400, "invalid_request", /format/);
    await expectProblem(await api(`${products()}/versions/9/changes`), 404, "version_not_found");
    await expectProblem(await api(`${products()}/versions/x/changes`), 400, "invalid_request");
    await expectProblem(
      await api(`/orders/${fixtures.orderA}/tables/nothing/versions/1/changes`),
      404,
      "table_not_found",
    );
    await expectProblem(await api(`${products(fixtures.refunded)}/versions/1/changes`), 409, "order_not_delivered");
  });

  it("answer 202 rendition_pending while a CSV or JSON Lines form is made, then 302", async () => {
    for (const format of ["csv", "jsonl"]) {
      const path = `${products()}/versions/2/changes?format=${format}`;
      const pending = await api(path);
      await expectProblem(pending, 202, "rendition_pending");
      expect(Number(pending.headers.get("retry-after"))).toBeGreaterThan(0);
      let location = "";
      await waitFor(
        async () => {
          // The server's worker makes the rendition; asked once a second, within the account's 60/minute.
          await new Promise((resolve) => setTimeout(resolve, 1000));
          const response = await api(path);
          if (response.status === 302) location = response.headers.get("location")!;
          else await response.arrayBuffer();
          return response.status === 302;
        },
        60_000,
        `the ${format} change file`,
      );
      const text = await (await fetch(location)).text();
      expect(text).toContain("_change_type");
      expect(text).toContain("update_postimage");
    }
  });
});
