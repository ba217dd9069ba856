import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { dataContractSchema, type DataContract } from "../../lib/schemas/contract";
import { describeTable, setCadence } from "../../lib/tables/dictionary";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { tableChecks } from "../../lib/tables/quality-admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { odcsCheck } from "../helpers/odcs";
import { startServer, type TestServer } from "../helpers/server";

/**
 * The data contract (docs/tables.md, "What a table promises"): `GET .../tables/{name}/contract` answers the table's ODCS
 * v3.1.0 document, valid against the official JSON Schema vendored in vendor/odcs (Ajv, draft
 * 2019-09, with formats): a table with a key, a dictionary, checks and a 1-day cadence names them
 * all. YAML by default, JSON on request, an ETag per body and 304; another buyer's table is a 404.
 */

let env: TestEnvironment;
let server: TestServer;
const fixtures = {} as { orderId: string; key: string; otherKey: string; plainOrderId: string };

let checkOdcs: (document: unknown) => void;

beforeAll(async () => {
  env = await createTestEnvironment("contract");
  checkOdcs = await odcsCheck();
  const account = await buyer("contract");
  fixtures.orderId = (await order(account.id)).id;
  fixtures.plainOrderId = (await order(account.id)).id;
  fixtures.key = (await apiKey(account.id)).secret;
  fixtures.otherKey = (await apiKey((await buyer("contract-other")).id)).secret;
  const csv = "sku,title,price_eur,in_stock,seen_on\nA1,Mug,9.5,true,2026-11-01\nB2,,12,false,2026-11-02\n";
  for (const [orderId, key] of [
    [fixtures.orderId, ["sku"]],
    [fixtures.plainOrderId, undefined],
  ] as const) {
    await publishTable({
      orderId,
      table: "products",
      key: key ? [...key] : undefined,
      parts: [{ name: "products.csv", source: { stream: Readable.from([Buffer.from(csv)]) } }],
    });
  }
  await processPendingNow();
  await describeTable(fixtures.orderId, "products", {
    description: "Products of the shop, one row per SKU.",
    columns: [
      { name: "sku", description: "The shop's stock-keeping unit.", example: "A1" },
      { name: "price_eur", description: "Price, VAT included.", unit: "EUR" },
    ],
  });
  await tableChecks(fixtures.orderId, "products", ["row_count_drop=0.3", "distribution_shift=0.25:off"]);
  await setCadence(fixtures.orderId, "products", { every: "1d" });
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", JOBS_WORKER: "off", SUPPORT_EMAIL: "data@seller.example" },
  });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const contract = (orderId: string, headers: Record<string, string> = {}, key = fixtures.key) =>
  fetch(`${server.url}/api/v1/orders/${orderId}/tables/products/contract`, {
    headers: { Authorization: `Bearer ${key}`, ...headers },
  });

describe("the data contract", { timeout: 120_000 }, () => {
  let yamlDocument: DataContract;

  it("answers YAML by default, valid ODCS, naming the key, descriptions, thresholds and frequency", async () => {
    const response = await contract(fixtures.orderId);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/yaml; charset=utf-8");
    const document = parseYaml(await response.text());
    checkOdcs(document);
    yamlDocument = dataContractSchema.strict().parse(document);
    expect(yamlDocument).toMatchObject({
      apiVersion: "v3.1.0",
      kind: "DataContract",
      name: "products",
      version: "1.0.0",
      status: "active",
      description: { purpose: "Products of the shop, one row per SKU." },
      slaProperties: [
        { property: "frequency", value: 1, unit: "d" },
        { property: "latency", value: 6, unit: "h" },
      ],
      support: [{ channel: "email", tool: "email", url: "mailto:data@seller.example" }],
    });
    expect(yamlDocument.id).toMatch(/^tbl_/);
    const [table] = yamlDocument.schema;
    expect(table!.properties).toEqual([
      {
        name: "sku",
        physicalName: "sku",
        logicalType: "string",
        physicalType: "VARCHAR",
        description: "The shop's stock-keeping unit.",
        primaryKey: true,
        primaryKeyPosition: 1,
        required: true,
        examples: ["A1"],
      },
      { name: "title", physicalName: "title", logicalType: "string", physicalType: "VARCHAR", required: false },
      {
        name: "price_eur",
        physicalName: "price_eur",
        logicalType: "number",
        physicalType: "DOUBLE",
        description: "Price, VAT included.",
        required: true,
        customProperties: [{ property: "unit", value: "EUR" }],
      },
      { name: "in_stock", physicalName: "in_stock", logicalType: "boolean", physicalType: "BOOLEAN", required: true },
      { name: "seen_on", physicalName: "seen_on", logicalType: "date", physicalType: "DATE", required: true },
    ]);
    const quality = Object.fromEntries(table!.quality.map((rule) => [rule.name, rule]));
    expect(Object.keys(quality)).not.toContain("distribution_shift");
    expect(quality.row_count_drop).toMatchObject({
      type: "custom",
      engine: "dataset-access",
      description: "Held when rows drop by more than 30% from the previous version.",
      implementation: { check: "row_count_drop", threshold: 0.3, level: "hold" },
    });
    expect(quality.distinct_drop!.description).toMatch(/^Published with a warning when/);
    expect(yamlDocument.servers.map((entry) => [entry.server, entry.location])).toEqual([
      ["api", `${server.url}/api/v1/orders/${fixtures.orderId}/tables/products`],
      ["delta-sharing", `${server.url}/api/delta-sharing`],
    ]);
  });

  it("is held to the schema for real: a contract it must refuse is refused", () => {
    const broken = { ...yamlDocument, status: undefined, servers: [{ server: "api", type: "ftp" }] };
    expect(() => checkOdcs(broken)).toThrow();
  });

  it("answers the same document as JSON with Accept: application/json", async () => {
    const response = await contract(fixtures.orderId, { Accept: "application/json" });
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const document = await response.json();
    checkOdcs(document);
    expect(document).toEqual(yamlDocument);
  });

  it("is valid for a table with no key, no dictionary, no cadence and no support address", async () => {
    const response = await contract(fixtures.plainOrderId, { Accept: "application/json" });
    const document = dataContractSchema.strict().parse(await response.json());
    checkOdcs(document);
    expect(document.slaProperties).toBeUndefined();
    expect(document.schema[0]!.properties.some((property) => property.primaryKey)).toBe(false);
  });

  it("has an ETag per content: 304 while unchanged, a new one when the dictionary changes", async () => {
    const first = await contract(fixtures.orderId);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]{32}"$/);
    expect((await contract(fixtures.orderId, { "If-None-Match": etag })).status).toBe(304);
    const json = await contract(fixtures.orderId, { Accept: "application/json" });
    expect(json.headers.get("etag")).not.toBe(etag);
    await describeTable(fixtures.orderId, "products", { columns: [{ name: "title", description: "Its name." }] });
    const changed = await contract(fixtures.orderId, { "If-None-Match": etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
  });

  it.each([
    ["another buyer's table", () => contract(fixtures.orderId, {}, fixtures.otherKey), "order_not_found"],
    [
      "an unknown table",
      () =>
        fetch(`${server.url}/api/v1/orders/${fixtures.orderId}/tables/nothing/contract`, {
          headers: { Authorization: `Bearer ${fixtures.key}` },
        }),
      "table_not_found",
    ],
  ])("answers 404 for %s", async (_name, request, code) => {
    const response = await request();
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code });
  });
});
