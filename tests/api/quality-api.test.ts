import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db, Prisma } from "../../lib/db/client";
import { versionPageSchema, versionSchema } from "../../lib/schemas/api";
import {
  QUALITY_BEFORE_CHECKS,
  qualityReportSchema,
  type Quality,
  type QualityReport,
} from "../../lib/schemas/quality";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { withoutQualityChecks } from "../tables/helpers";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/**
 * What buyers get of the quality checks (contract Part 6) over HTTP on the production server: each
 * Version's `quality` (as stored, or passed with no checks for a version made before the checks),
 * in the versions list, one version and the `table.updated` event; and
 * GET .../versions/{version}/quality answering the report stored with the version's publication,
 * with every error code of the route. Reports and qualities are written here as the gate stores
 * them (lib/tables/pipeline.ts makes them; this tests what the API answers).
 */

let env: TestEnvironment;
let server: TestServer;
const fixtures = {} as { key: string; otherKey: string; orderId: string; otherOrder: string };

const REPORT: QualityReport = {
  rows: 2,
  previous_rows: 3,
  changes: { inserted: 0, updated: 1, deleted: 1 },
  added_columns: [],
  columns: [
    {
      name: "price",
      type: "DOUBLE",
      null_fraction: 0.5,
      previous_null_fraction: 0,
      distinct: 1,
      previous_distinct: 3,
      min: 6,
      max: 6,
      mean: 6,
      psi: 0.41,
    },
  ],
  checks: [
    { name: "row_count_drop", column: null, value: 1 / 3, threshold: 0.5, level: "hold", outcome: "passed" },
    { name: "distribution_shift", column: "price", value: 0.41, threshold: 0.25, level: "warn", outcome: "warned" },
  ],
};
const WARNED: Quality = { status: "warned", reason: null, checks: [REPORT.checks[1]!] };

async function publish(orderId: string, content: string, name: string) {
  await publishTable({
    orderId,
    table: "products",
    key: ["id"],
    parts: [{ name, source: { stream: Readable.from([Buffer.from(content)]) } }],
  });
  await processPendingNow();
}

beforeAll(async () => {
  env = await createTestEnvironment("api_quality");
  Object.assign(process.env, {
    AUTH_SECRET: TEST_AUTH_SECRET,
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
  });
  const a = await buyer("quality-a");
  const b = await buyer("quality-b");
  fixtures.orderId = (await order(a.id)).id;
  fixtures.otherOrder = (await order(b.id)).id;
  await createEndpoint({ buyerId: a.id, url: "http://127.0.0.1:9/hooks", events: ["table.updated"] });
  await publish(fixtures.orderId, "id,price\n1,3\n2,4\n3,5\n", "v1.csv");
  // Versions 2 and 3 drop rows: the gate is off here, their reports and quality are written below.
  await withoutQualityChecks(fixtures.orderId, "products");
  await publish(fixtures.orderId, "id,price\n1,6\n2,\n", "v2.csv");
  await publish(fixtures.orderId, "id,price\n1,6\n", "v3.csv");
  await publish(fixtures.otherOrder, "id,price\n9,1\n", "b.csv");
  const versions = await db().tableVersion.findMany({
    where: { table: { orderId: fixtures.orderId } },
    select: { version: true, publicationId: true },
  });
  expect(versions.map((version) => version.version).sort()).toEqual([1, 2, 3]);
  // Version 1 of both orders as made before the checks existed: no report, no quality.
  await db().tablePublication.updateMany({ where: { version: 1 }, data: { report: Prisma.DbNull } });
  await db().tableVersion.updateMany({ where: { version: 1 }, data: { quality: Prisma.DbNull } });
  const second = versions.find((version) => version.version === 2)!;
  await db().tablePublication.update({ where: { id: second.publicationId }, data: { report: REPORT } });
  await db().tableVersion.update({ where: { publicationId: second.publicationId }, data: { quality: WARNED } });
  // Version 3: its report stored, then pruned.
  const third = versions.find((version) => version.version === 3)!;
  await db().tablePublication.update({ where: { id: third.publicationId }, data: { report: REPORT } });
  await db().tableVersion.update({ where: { publicationId: third.publicationId }, data: { prunedAt: new Date() } });
  fixtures.key = (await apiKey(a.id)).secret;
  fixtures.otherKey = (await apiKey(b.id)).secret;
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const api = (path: string, key = fixtures.key, method = "GET") =>
  fetch(`${server.url}/api/v1${path}`, { method, headers: { Authorization: `Bearer ${key}` } });
const versions = (orderId = fixtures.orderId) => `/orders/${orderId}/tables/products/versions`;

describe("Version quality", () => {
  it("is as stored, and passed with no checks for a version made before the checks", async () => {
    const page = versionPageSchema.parse(await (await api(versions())).json());
    expect(page.data.map(({ version, quality }) => [version, quality])).toEqual([
      [2, WARNED],
      [1, QUALITY_BEFORE_CHECKS],
    ]);
    const two = versionSchema.strict().parse(await (await api(`${versions()}/2`)).json());
    expect(two.quality).toEqual(WARNED);
  });

  it("rides the table.updated event with the rest of the Version", async () => {
    const messages = await db().webhookMessage.findMany({
      where: { eventType: "table.updated" },
      orderBy: { createdAt: "asc" },
      select: { payload: true },
    });
    expect(messages).toHaveLength(3);
    for (const [index, { payload }] of messages.entries()) {
      const { data } = JSON.parse(payload) as { data: Record<string, unknown> };
      const { order_id, table, freshness, ...version } = data;
      expect({ order_id, table, freshness }).toEqual({
        order_id: fixtures.orderId,
        table: "products",
        freshness: null,
      });
      // Each was announced as it was made: before this test stored any quality.
      expect(versionSchema.strict().parse(version)).toMatchObject({
        version: index + 1,
        quality: QUALITY_BEFORE_CHECKS,
      });
    }
  });
});

describe("GET .../versions/{version}/quality", () => {
  it("answers the report stored with the version's publication, rate limited as the other version routes", async () => {
    const response = await api(`${versions()}/2/quality`);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("private, no-store");
    expect(response.headers.get("ratelimit-policy")).toMatch(/datasets/);
    expect(qualityReportSchema.strict().parse(await response.json())).toEqual(REPORT);
    const head = await api(`${versions()}/2/quality`, fixtures.key, "HEAD");
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it.each([
    ["a version made before the checks", () => `${versions()}/1/quality`, 404, "quality_report_not_found", /before/],
    ["a version never made", () => `${versions()}/9/quality`, 404, "version_not_found", undefined],
    ["a pruned version", () => `${versions()}/3/quality`, 404, "version_not_found", /pruned/],
    ["version 0", () => `${versions()}/0/quality`, 400, "invalid_request", /version/],
    ["a version that is no number", () => `${versions()}/two/quality`, 400, "invalid_request", /version/],
    [
      "an unknown table",
      () => `/orders/${fixtures.orderId}/tables/nothing/versions/1/quality`,
      404,
      "table_not_found",
      undefined,
    ],
    [
      "a malformed table name",
      () => `/orders/${fixtures.orderId}/tables/No-Name/versions/1/quality`,
      404,
      "table_not_found",
      undefined,
    ],
    [
      "an unknown order",
      () => `${versions("ord_00000000000000000000000000000000")}/1/quality`,
      404,
      "order_not_found",
      undefined,
    ],
    ["another buyer's order", () => `${versions(fixtures.otherOrder)}/1/quality`, 404, "order_not_found", undefined],
  ] as const)("answers %s", async (_name, path, status, code, detail) => {
    await expectProblem(await api(path()), status, code, detail);
  });

  it("answers the other buyer's own version for its own key only", async () => {
    await expectProblem(
      await api(`${versions(fixtures.otherOrder)}/1/quality`, fixtures.otherKey),
      404,
      "quality_report_not_found",
    );
  });

  it("is in the OpenAPI document with its error codes", async () => {
    const document = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, { get: { operationId: string; responses: Record<string, { description: string }> } }>;
    };
    const entry = document.paths["/orders/{id}/tables/{name}/versions/{version}/quality"]!.get;
    expect(entry.operationId).toBe("getVersionQuality");
    expect(entry.responses["404"]!.description).toContain("`quality_report_not_found`");
    expect(JSON.stringify(document)).toContain('"QualityReport"');
  });
});
