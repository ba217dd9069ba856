import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db, sqlQuery } from "../../lib/db/client";
import { tableSchema, versionSchema } from "../../lib/schemas/api";
import { announceLateTables } from "../../lib/tables/freshness";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { runAdmin, runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/**
 * What a table promises (docs/tables.md, "What a table promises"), set by the operator and read by the buyer: the data
 * dictionary (`table:describe`: flags and a JSON or YAML file, only what a call names changes, the
 * table's for every version) and the cadence (`table:cadence`), with `freshness` on the Table, the
 * automatic `delay` notice posted once per lateness whatever the number of watchers, and the next
 * version ending it. Time is the database's: the test moves the version's time back, never sleeps.
 * Bad input is refused with a sentence and changes nothing.
 */

let env: TestEnvironment;
let server: TestServer;
let cliEnv: Record<string, string | undefined>;
let workDir: string;
const fixtures = {} as { orderId: string; key: string };

/** The products table's CSV; from version 2 on it has a fourth column, brand. */
const csv = (rows: number, brand = false) =>
  [
    `sku,price_eur,in_stock${brand ? ",brand" : ""}`,
    ...Array.from({ length: rows }, (_, i) => `s${i},${i + 0.5},true${brand ? ",acme" : ""}`),
  ].join("\n") + "\n";

async function publish(rows: number, brand = false) {
  await publishTable({
    orderId: fixtures.orderId,
    table: "products",
    key: ["sku"],
    parts: [{ name: `products-${rows}.csv`, source: { stream: Readable.from([Buffer.from(csv(rows, brand))]) } }],
  });
  await processPendingNow();
}

beforeAll(async () => {
  env = await createTestEnvironment("promises");
  Object.assign(process.env, {
    AUTH_SECRET: TEST_AUTH_SECRET,
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
  });
  cliEnv = { DATABASE_URL: env.database.url, STORAGE_DIR: env.storageDir };
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "promises-"));
  const account = await buyer("promises");
  fixtures.orderId = (await order(account.id)).id;
  fixtures.key = (await apiKey(account.id)).secret;
  await createEndpoint({
    buyerId: account.id,
    url: "http://127.0.0.1:9/hooks",
    events: ["table.notice", "table.updated"],
  });
  await publish(3);
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", JOBS_WORKER: "off" },
  });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  await fs.rm(workDir, { recursive: true, force: true });
});

const api = async (route: string) => {
  const response = await fetch(`${server.url}/api/v1/orders/${fixtures.orderId}/tables/products${route}`, {
    headers: { Authorization: `Bearer ${fixtures.key}` },
  });
  expect(response.status).toBe(200);
  return response.json();
};
const table = async () => tableSchema.strict().parse(await api(""));
const describe_ = (...args: string[]) =>
  runAdminJson(cliEnv, "table:describe", "--order", fixtures.orderId, "--table", "products", ...args);
const events = async (type: string) =>
  (await db().webhookMessage.findMany({ where: { eventType: type }, orderBy: { createdAt: "asc" } })).map(
    (message) => JSON.parse(message.payload).data as Record<string, unknown>,
  );
const docs = async () =>
  (
    await sqlQuery<{ description: string | null; docs: unknown }>(
      `SELECT description, column_docs AS docs FROM order_tables WHERE order_id = $1`,
      [fixtures.orderId],
    )
  )[0];

describe("the data dictionary", { timeout: 120_000 }, () => {
  it("is empty until described: descriptions, units and examples null", async () => {
    const products = await table();
    expect(products.description).toBeNull();
    expect(products.columns!.map((column) => [column.name, column.description, column.unit, column.example])).toEqual([
      ["sku", null, null, null],
      ["price_eur", null, null, null],
      ["in_stock", null, null, null],
    ]);
  });

  it("takes the table's and columns' texts from flags, each --description after --column being that column's", async () => {
    const answer = await describe_(
      "--description",
      "Products of the shop, one row per SKU.",
      "--column",
      "price_eur",
      "--description",
      "Price, VAT included.",
      "--unit",
      "EUR",
      "--example",
      "19.99",
      "--column",
      "sku",
      "--description",
      "The shop's stock-keeping unit.",
    );
    expect(answer).toMatchObject({ table: "products", description: "Products of the shop, one row per SKU." });
    const products = await table();
    expect(products.description).toBe("Products of the shop, one row per SKU.");
    expect(products.columns).toEqual([
      {
        name: "sku",
        type: "VARCHAR",
        nullable: false,
        description: "The shop's stock-keeping unit.",
        unit: null,
        example: null,
      },
      {
        name: "price_eur",
        type: "DOUBLE",
        nullable: false,
        description: "Price, VAT included.",
        unit: "EUR",
        example: "19.99",
      },
      { name: "in_stock", type: "BOOLEAN", nullable: false, description: null, unit: null, example: null },
    ]);
  });

  it("changes only what a call names; a YAML or JSON file alike; the flags win over the file", async () => {
    const yaml = path.join(workDir, "dictionary.yaml");
    await fs.writeFile(
      yaml,
      "columns:\n  in_stock:\n    description: Whether the shop has it.\n  price_eur:\n    unit: EUR (cents rounded)\n",
    );
    await describe_("--file", yaml, "--column", "price_eur", "--unit", "EUR");
    const json = path.join(workDir, "dictionary.json");
    await fs.writeFile(json, JSON.stringify({ columns: { sku: { example: "SKU-0001" } } }));
    await describe_("--file", json);
    const products = await table();
    expect(products.description).toBe("Products of the shop, one row per SKU.");
    expect(
      products.columns!.map(({ name, description, unit, example }) => ({ name, description, unit, example })),
    ).toEqual([
      { name: "sku", description: "The shop's stock-keeping unit.", unit: null, example: "SKU-0001" },
      { name: "price_eur", description: "Price, VAT included.", unit: "EUR", example: "19.99" },
      { name: "in_stock", description: "Whether the shop has it.", unit: null, example: null },
    ]);
  });

  it("is the table's: a new version shows it, and its new column has none until described", async () => {
    await publish(4, true);
    const version = versionSchema.strict().parse(await api("/versions/2"));
    expect(version.description).toBe("Products of the shop, one row per SKU.");
    expect(version.columns.map((column) => [column.name, column.description])).toEqual([
      ["sku", "The shop's stock-keeping unit."],
      ["price_eur", "Price, VAT included."],
      ["in_stock", "Whether the shop has it."],
      ["brand", null],
    ]);
    const first = versionSchema.strict().parse(await api("/versions/1"));
    expect(first.columns.map((column) => column.description)).toEqual([
      "The shop's stock-keeping unit.",
      "Price, VAT included.",
      "Whether the shop has it.",
    ]);
  });

  const refusals: [string, string[], RegExp][] = [
    [
      "an unknown column",
      ["--column", "colour", "--description", "Red."],
      /no column "colour" in its current version; its columns are sku, price_eur/,
    ],
    [
      "a description over 2,000 characters",
      ["--description", "x".repeat(2001)],
      /has 2,001 characters; at most 2,000 are allowed/,
    ],
    [
      "a column description over 2,000 characters",
      ["--column", "sku", "--description", "y".repeat(2500)],
      /description of column sku has 2,500 characters/,
    ],
    ["control characters", ["--description", "bad\u0007bell"], /control characters/],
    ["a --unit before any --column", ["--unit", "EUR"], /--unit belongs to a --column: give it after --column NAME/],
    [
      "a field twice for one column",
      ["--column", "sku", "--unit", "a", "--unit", "b"],
      /--unit is given twice for --column sku/,
    ],
    ["an unknown table", ["--description", "x"], /no table named "nothing"/],
  ];
  it.each(refusals)("refuses %s with a sentence, changing nothing", async (name, args, sentence) => {
    const before = await docs();
    const tableArgs = name === "an unknown table" ? ["--table", "nothing"] : ["--table", "products"];
    const result = await runAdmin(
      cliEnv,
      "table:describe",
      "--order",
      fixtures.orderId,
      ...tableArgs,
      ...args,
      "--json",
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(sentence);
    expect(await docs()).toEqual(before);
  });

  it.each([
    [
      "an unknown top-level field",
      { descripton: "typo" },
      /unknown field "descripton": known are description and columns/,
    ],
    ["an unknown column field", { columns: { sku: { units: "x" } } }, /unknown field "columns\.sku\.units"/],
    ["a list instead of an object", ["description"], /must hold one object/],
    ["columns as a list", { columns: ["sku"] }, /"columns" must be an object/],
    ["an unknown column in the file", { columns: { colour: { description: "Red." } } }, /no column "colour"/],
  ])("refuses a file with %s, naming it, changing nothing", async (_name, content, sentence) => {
    const before = await docs();
    const file = path.join(workDir, `bad-${Math.random()}.json`);
    await fs.writeFile(file, JSON.stringify(content));
    const result = await runAdmin(
      cliEnv,
      "table:describe",
      "--order",
      fixtures.orderId,
      "--table",
      "products",
      "--file",
      file,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(sentence);
    expect(await docs()).toEqual(before);
  });

  it("refuses a file that is not YAML, naming it", async () => {
    const file = path.join(workDir, "broken.yaml");
    await fs.writeFile(file, "columns: [unclosed\n");
    const result = await runAdmin(
      cliEnv,
      "table:describe",
      "--order",
      fixtures.orderId,
      "--table",
      "products",
      "--file",
      file,
    );
    expect(result).toMatchObject({ code: 1, stderr: expect.stringMatching(/broken\.yaml is not valid YAML/) });
  });
});

describe("freshness", { timeout: 180_000 }, () => {
  const cadence = (...args: string[]) =>
    runAdmin(cliEnv, "table:cadence", "--order", fixtures.orderId, "--table", "products", ...args, "--json");
  /** Moves the current version's time back, as if it had been made that long ago. */
  const ageCurrentVersion = (hours: number) =>
    sqlQuery(
      `UPDATE table_versions v SET created_at = now() - make_interval(hours => $2)
       FROM order_tables t WHERE v.table_id = t.id AND v.version = t.current_version AND t.order_id = $1`,
      [fixtures.orderId, hours],
    );

  it("is null without a cadence; with one, every and grace in ISO 8601, expected_by, not late", async () => {
    expect((await table()).freshness).toBeNull();
    const set = await cadence("--every", "1d");
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ cadence: { every: "P1D", grace: "PT6H" } });
    const { freshness, updated_at } = await table();
    expect(freshness).toEqual({
      every: "P1D",
      grace: "PT6H",
      expected_by: new Date(Date.parse(updated_at!) + 30 * 3600_000).toISOString(),
      late: false,
    });
    expect(JSON.parse((await cadence("--every", "P22DT12H", "--grace", "2h")).stdout).cadence).toMatchObject({
      every: "P22DT12H",
      grace: "PT2H",
    });
    await cadence("--every", "1d");
  });

  it.each([
    ["a cadence under an hour", ["--every", "30m"], /30 minutes is outside 1 hour to 90 days/],
    ["a cadence over 90 days", ["--every", "91d"], /91 days is outside 1 hour to 90 days/],
    ["a cadence that is no duration", ["--every", "daily"], /"daily" is not a duration: write e\.g\. 6h, 1d/],
    ["a grace that is no duration", ["--every", "1d", "--grace", "soon"], /grace "soon" is not a duration/],
    ["both --every and --none", ["--every", "1d", "--none"], /either --every DURATION .* or --none, not both/],
    ["neither", [], /Give --every DURATION \(1h to 90d\), or --none/],
  ])("refuses %s with a sentence, changing nothing", async (_name, args, sentence) => {
    const before = (await table()).freshness;
    const result = await cadence(...args);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(sentence);
    expect((await table()).freshness).toEqual(before);
  });

  it("announces a late table once, whatever the number of watchers, until the next version ends it", async () => {
    await ageCurrentVersion(31);
    const late = await table();
    expect(late.freshness).toMatchObject({ late: true });
    // Three watchers at once, then again: one notice, one event.
    const runs = await Promise.all([announceLateTables(), announceLateTables(), announceLateTables()]);
    expect(runs.map((run) => run.announced).sort()).toEqual([0, 0, 1]);
    expect((await announceLateTables()).announced).toBe(0);
    const notices = (await table()).notices.filter((notice) => notice.type === "delay");
    expect(notices).toHaveLength(1);
    const due = late.freshness!.expected_by!;
    expect(notices[0]!.effective_at).toBe(due);
    expect(notices[0]!.message).toContain(
      `was due by ${due.slice(0, 16).replace("T", " ")} UTC (one every 1 day, with 6 hours of grace)`,
    );
    const announced = await events("table.notice");
    expect(announced).toHaveLength(1);
    expect(announced[0]).toMatchObject({
      order_id: fixtures.orderId,
      table: "products",
      type: "delay",
      id: notices[0]!.id,
    });

    await publish(5, true);
    const updated = (await events("table.updated")).at(-1)!;
    expect(updated).toMatchObject({ table: "products", freshness: { every: "P1D", late: false } });
    expect((await table()).freshness).toMatchObject({ late: false });
    expect((await announceLateTables()).announced).toBe(0);
    // Late again later: a new lateness, a new notice.
    await ageCurrentVersion(40);
    expect((await announceLateTables()).announced).toBe(1);
    expect((await events("table.notice")).length).toBe(2);
  });

  it("stops watching with --none", async () => {
    expect((await cadence("--none")).code).toBe(0);
    expect((await table()).freshness).toBeNull();
    await ageCurrentVersion(24 * 100);
    expect((await announceLateTables()).announced).toBe(0);
  });
});
