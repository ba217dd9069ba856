import { readTableRows, rowsPageJson } from "../explore/rows";
import { runOrderSql, sqlAnswerJson } from "../explore/sql";
import { db } from "../db/client";
import { qualityReportJson, tableJson, versionJson, versionPageJson } from "../tables/queries";
import { tableContract } from "../tables/contract";
import { stringify as yamlText } from "yaml";
import type { OpenApiDocument } from "./reference";
import { exampleOf } from "./reference";

/** An example call: its path below /api/v1 (query included, encoded) and, for a JSON answer, the body it gets. */
export type ExampleCall = { path: string; body?: string };

/** The examples of the table endpoints, by operation id. */
export type TableExamples = Record<
  | "getTable"
  | "listVersions"
  | "getVersion"
  | "getVersionQuality"
  | "downloadChanges"
  | "readTableRows"
  | "downloadTableSubset"
  | "runOrderSql"
  | "getTableContract",
  ExampleCall
>;

/**
 * What the examples ask of the demo (scripts/seed-demo.ts): its refreshed price list (three versions, so a version
 * with a quality report against the one before and a change file with deletes) and its product list.
 */
export const TABLE_EXAMPLE = {
  refreshed: "weekly_prices",
  version: 3,
  table: "products",
  rows: {
    columns: "sku,title,price_eur",
    where: "in_stock AND price_eur < 10",
    order_by: "price_eur desc",
    limit: "3",
  },
  subset: { columns: "sku,title,price_eur", where: "price_eur < 10", format: "csv" },
  sql: {
    q: 'SELECT _commit_version AS version, _change_type AS change, count(*) AS rows FROM "weekly_prices@changes" GROUP BY ALL ORDER BY ALL',
    limit: "20",
  },
} as const;

const pretty = (json: string | unknown) => JSON.stringify(typeof json === "string" ? JSON.parse(json) : json, null, 2);
const withQuery = (path: string, query: Record<string, string>) => `${path}?${new URLSearchParams(query)}`;

/** The paths the examples call for an order: the same with real ids and with the schema's. */
function paths(orderId: string) {
  const { refreshed, version, table, rows, subset, sql } = TABLE_EXAMPLE;
  const base = `/orders/${orderId}/tables`;
  return {
    getTable: `${base}/${refreshed}`,
    listVersions: `${base}/${refreshed}/versions?limit=2`,
    getVersion: `${base}/${refreshed}/versions/${version}`,
    getVersionQuality: `${base}/${refreshed}/versions/${version}/quality`,
    downloadChanges: `${base}/${refreshed}/versions/${version}/changes`,
    readTableRows: withQuery(`${base}/${table}/rows`, rows),
    downloadTableSubset: withQuery(`${base}/${table}/subset`, subset),
    runOrderSql: withQuery(`/orders/${orderId}/sql`, sql),
    getTableContract: `${base}/${refreshed}/contract`,
  };
}

/**
 * The demo account's own answers, read as the API reads them (no rate limit is used). The rows and SQL answers come
 * from the data engine; they are the same for the same versions, so they are kept for as long as those are current.
 */
export async function demoTableExamples(
  buyerId: string,
  orderId: string,
  origin: string,
): Promise<TableExamples | undefined> {
  const { refreshed, version, table, rows, sql } = TABLE_EXAMPLE;
  const current = await db().orderTable.findMany({
    where: { orderId, name: { in: [refreshed, table] } },
    select: { name: true, currentVersion: true },
  });
  if (current.length < 2) return undefined;
  const at = paths(orderId);
  const engineKey = `${orderId}:${current.map((entry) => `${entry.name}@${entry.currentVersion}`).join(",")}`;
  const engine = await engineAnswers(engineKey, async () => ({
    rows: pretty(
      rowsPageJson(
        await readTableRows({
          buyerId,
          orderId,
          table,
          columns: rows.columns.split(","),
          where: rows.where,
          orderBy: rows.order_by,
          limit: Number(rows.limit),
          offset: 0,
          via: { door: "rows" },
        }),
      ),
    ),
    sql: pretty(
      sqlAnswerJson(
        await runOrderSql({ buyerId, orderId, sql: sql.q, limit: Number(sql.limit), via: { door: "sql" } }),
      ),
    ),
  }));
  return {
    getTable: { path: at.getTable, body: pretty(await tableJson(buyerId, orderId, refreshed)) },
    listVersions: {
      path: at.listVersions,
      body: pretty(await versionPageJson(buyerId, orderId, refreshed, { limit: 2, offset: 0 })),
    },
    getVersion: { path: at.getVersion, body: pretty(await versionJson(buyerId, orderId, refreshed, version)) },
    getVersionQuality: {
      path: at.getVersionQuality,
      body: pretty(await qualityReportJson(buyerId, orderId, refreshed, version)),
    },
    downloadChanges: { path: at.downloadChanges },
    readTableRows: { path: at.readTableRows, body: engine?.rows },
    downloadTableSubset: { path: at.downloadTableSubset },
    runOrderSql: { path: at.runOrderSql, body: engine?.sql },
    getTableContract: { path: at.getTableContract, body: await contractYaml(buyerId, orderId, refreshed, origin) },
  };
}

/** The demo table's data contract as the API answers it (YAML), with the page's own address in it. */
async function contractYaml(buyerId: string, orderId: string, table: string, origin: string): Promise<string> {
  return (
    await tableContract(buyerId, orderId, table, {
      json: false,
      origin,
      supportEmail: process.env.SUPPORT_EMAIL || undefined,
    })
  ).body;
}

let kept: { key: string; answers: Promise<{ rows: string; sql: string } | undefined> } | undefined;

/** The engine's answers for `key`, made once per set of current versions; undefined when the engine cannot. */
function engineAnswers(key: string, make: () => Promise<{ rows: string; sql: string }>) {
  if (kept?.key !== key) kept = { key, answers: make().catch(() => undefined) };
  return kept.answers;
}

/** The same examples from the schemas' own examples, where the demo is not loaded. */
export function schemaTableExamples(document: OpenApiDocument, orderId: string): TableExamples {
  const schemas = document.components?.schemas ?? {};
  const at = paths(orderId);
  const body = (name: string) => pretty(exampleOf(document, schemas[name]));
  return {
    getTable: { path: at.getTable, body: body("Table") },
    listVersions: { path: at.listVersions, body: body("VersionPage") },
    getVersion: { path: at.getVersion, body: body("Version") },
    getVersionQuality: { path: at.getVersionQuality, body: body("QualityReport") },
    downloadChanges: { path: at.downloadChanges },
    readTableRows: { path: at.readTableRows, body: body("RowsPage") },
    downloadTableSubset: { path: at.downloadTableSubset },
    runOrderSql: { path: at.runOrderSql, body: body("SqlResult") },
    getTableContract: { path: at.getTableContract, body: yamlText(exampleOf(document, schemas.DataContract)) },
  };
}
