import { downloadTargetFor, RENDITION_RETRY_AFTER_SECONDS } from "../datasets/access";
import type { RenditionFormat } from "../data-formats";
import { Prisma, sqlQuery, type SqlRunner } from "../db/client";
import type { DownloadTarget } from "../downloads/links";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { FILE_JSON, isoUtc, orderNotFound, TABLE_JSON } from "../orders/queries";
import { SEEN_FILE } from "../orders/seen-files";
import { describedColumnsSql, freshnessSql } from "../orders/table-promises-sql";
import { QUALITY_BEFORE_CHECKS } from "../schemas/quality";
import { TABLE_NAME_PATTERN } from "./names";
import { formatSeconds } from "../format";

/**
 * Reads of an order's tables and versions for the API (contract Part 4), behind the same tenant
 * boundary as the order reads (lib/orders/queries.ts): every statement is scoped by the buyer's id,
 * and another buyer's order is answered exactly like a missing one. Each read is one statement that
 * builds the answer's JSON. Tables and versions read like an order (any status); their files
 * download like files (delivered orders only).
 */

/** A version row `v` of the table `vt` as the API's Version object, its parts by name. */
const VERSION_JSON = Prisma.sql`json_build_object(
  'version', v.version,
  'mode', vt.mode,
  'created_at', ${isoUtc(Prisma.sql`v.created_at`)},
  'rows', v.rows,
  'description', vt.description,
  'columns', ${describedColumnsSql("vt", Prisma.sql`v.columns`)},
  'changes', v.changes,
  'quality', COALESCE(v.quality, ${JSON.stringify(QUALITY_BEFORE_CHECKS)}::jsonb),
  'files', COALESCE((
    SELECT json_agg(${FILE_JSON} ORDER BY f.name)
    FROM order_files f
    JOIN table_publications p ON p.id = f.publication_id
    JOIN order_tables t ON t.id = p.table_id
    WHERE f.publication_id = v.publication_id AND ${SEEN_FILE}), '[]'::json)
)`;

/** The buyer's order and its table of that name: one row (null table columns when the order has no such table), or none. */
function scopedTable(orderId: string, buyerId: string, name: string, join: Prisma.Sql = Prisma.empty) {
  return Prisma.sql`
    FROM orders o
    LEFT JOIN order_tables vt ON vt.order_id = o.id AND vt.name = ${name}
    ${join}
    WHERE o.id = ${orderId} AND o.buyer_id = ${buyerId}`;
}

/** A malformed order id or table name names nothing: refused before any query. */
function checkNames(orderId: string, name: string): void {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  if (!TABLE_NAME_PATTERN.test(name)) throw tableNotFound(orderId, name);
}

type Found = { order_found: boolean; table_found: boolean | null };

function foundOrThrow(row: Found | undefined, orderId: string, name: string): void {
  if (!row) throw orderNotFound(orderId);
  if (!row.table_found) throw tableNotFound(orderId, name);
}

/** `GET /orders/{id}/tables/{name}`: the table with its current version. */
export async function tableJson(
  buyerId: string,
  orderId: string,
  name: string,
  sql: SqlRunner = sqlQuery,
): Promise<string> {
  checkNames(orderId, name);
  const query = Prisma.sql`
    SELECT true AS order_found, vt.id IS NOT NULL AS table_found,
      (SELECT ${TABLE_JSON}::text FROM order_tables t
         LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = t.current_version
       WHERE t.id = vt.id) AS table
    ${scopedTable(orderId, buyerId, name)}`;
  const [row] = await sql<Found & { table: string }>(query.text, query.values);
  foundOrThrow(row, orderId, name);
  return row!.table;
}

/** What a table's data contract is made of (./contract.ts): the table, its dictionary, checks and cadence, its current version. */
export type ContractSource = {
  id: string;
  name: string;
  mode: "snapshot" | "append";
  key: string[];
  version: number | null;
  createdAt: Date | null;
  columns: { name: string; type: string; nullable: boolean }[] | null;
  description: string | null;
  docs: Record<string, { description?: string | null; unit?: string | null; example?: string | null }>;
  checks: unknown;
  cadenceSeconds: number | null;
  graceSeconds: number | null;
};

/** The buyer's table for its data contract, behind the same boundary as every read here. */
export async function tableContractSource(
  buyerId: string,
  orderId: string,
  name: string,
  sql: SqlRunner = sqlQuery,
): Promise<ContractSource> {
  checkNames(orderId, name);
  const query = Prisma.sql`
    SELECT true AS order_found, vt.id IS NOT NULL AS table_found, vt.id, vt.name, vt.mode, vt.key,
      vt.current_version AS version, v.created_at AS "createdAt", v.columns, vt.description, vt.column_docs AS docs,
      vt.checks, vt.cadence_seconds AS "cadenceSeconds", vt.grace_seconds AS "graceSeconds"
    ${scopedTable(orderId, buyerId, name, Prisma.sql`LEFT JOIN table_versions v ON v.table_id = vt.id AND v.version = vt.current_version`)}`;
  const [row] = await sql<Found & ContractSource>(query.text, query.values);
  foundOrThrow(row, orderId, name);
  return { ...row!, createdAt: row!.createdAt ? new Date(row!.createdAt) : null };
}

/** A table's `freshness` as JSON text (`null` without a cadence), read by the version's `table.updated` event. */
export async function tableFreshnessText(tableId: string, sql: SqlRunner = sqlQuery): Promise<string> {
  const query = Prisma.sql`
    SELECT ${freshnessSql("t", Prisma.sql`v.created_at`, isoUtc)}::text AS freshness
    FROM order_tables t LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = t.current_version
    WHERE t.id = ${tableId}`;
  const [row] = await sql<{ freshness: string | null }>(query.text, query.values);
  return row?.freshness ?? "null";
}

/** `GET /orders/{id}/tables/{name}/versions`: a page of versions, newest first; pruned versions are gone. */
export async function versionPageJson(
  buyerId: string,
  orderId: string,
  name: string,
  page: { limit: number; offset: number },
  sql: SqlRunner = sqlQuery,
): Promise<string> {
  checkNames(orderId, name);
  const query = Prisma.sql`
    SELECT true AS order_found, vt.id IS NOT NULL AS table_found,
      (SELECT count(*)::int FROM (
         SELECT 1 FROM table_versions v WHERE v.table_id = vt.id AND v.pruned_at IS NULL
         ORDER BY v.version DESC OFFSET ${page.offset} LIMIT ${page.limit + 1}) fetched) AS fetched,
      COALESCE((SELECT json_agg(${VERSION_JSON} ORDER BY v.version DESC) FROM (
         SELECT * FROM table_versions v WHERE v.table_id = vt.id AND v.pruned_at IS NULL
         ORDER BY v.version DESC OFFSET ${page.offset} LIMIT ${page.limit}) v), '[]'::json)::text AS data
    ${scopedTable(orderId, buyerId, name)}`;
  const [row] = await sql<Found & { fetched: number; data: string }>(query.text, query.values);
  foundOrThrow(row, orderId, name);
  const nextOffset = row!.fetched > page.limit ? page.offset + page.limit : null;
  return `{"data":${row!.data},"next_offset":${nextOffset}}`;
}

/** `GET /orders/{id}/tables/{name}/versions/{version}`: one version, or version_not_found (never made, or pruned). */
export async function versionJson(
  buyerId: string,
  orderId: string,
  name: string,
  version: number,
  sql: SqlRunner = sqlQuery,
): Promise<string> {
  return keptVersionText(buyerId, orderId, name, version, Prisma.sql`${VERSION_JSON}::text`, sql);
}

/** `selected` (text, of the version row `v`) for a kept version of the buyer's table, or the table's or version's 404. */
async function keptVersionText(
  buyerId: string,
  orderId: string,
  name: string,
  version: number,
  selected: Prisma.Sql,
  sql: SqlRunner,
): Promise<string> {
  checkNames(orderId, name);
  const query = Prisma.sql`
    SELECT true AS order_found, vt.id IS NOT NULL AS table_found,
      (SELECT ${selected} FROM table_versions v
       WHERE v.table_id = vt.id AND v.version = ${version} AND v.pruned_at IS NULL) AS version
    ${scopedTable(orderId, buyerId, name)}`;
  const [row] = await sql<Found & { version: string | null }>(query.text, query.values);
  foundOrThrow(row, orderId, name);
  if (!row!.version) throw versionNotFound(name, version);
  return row!.version;
}

/**
 * `GET .../versions/{version}/quality`: the quality report stored with the version's publication
 * (made by the checks before the version). A version made before the checks existed has none:
 * 404 quality_report_not_found (its Version's quality reads as passed with no checks).
 */
export async function qualityReportJson(
  buyerId: string,
  orderId: string,
  name: string,
  version: number,
  sql: SqlRunner = sqlQuery,
): Promise<string> {
  const selected = Prisma.sql`(SELECT json_build_object('report', p.report) FROM table_publications p
    WHERE p.id = v.publication_id)::text`;
  const found = await keptVersionText(buyerId, orderId, name, version, selected, sql);
  const report = (JSON.parse(found) as { report: unknown }).report;
  if (report === null) {
    throw new AppError(
      "quality_report_not_found",
      `Version ${version} of ${name} was made before quality reports existed, so it has none; its quality reads as passed with no checks.`,
    );
  }
  return JSON.stringify(report);
}

export function tableNotFound(orderId: string, name: string): AppError {
  return new AppError("table_not_found", `Order ${orderId} has no table named ${JSON.stringify(name.slice(0, 70))}.`);
}

export function versionNotFound(name: string, version: number): AppError {
  return new AppError(
    "version_not_found",
    `Table ${name} has no version ${version}: it was never made, or it was pruned (the dashboard and the versions list show the versions kept).`,
  );
}

/**
 * `GET .../versions/{version}/changes?format=`: the version's change file as a download target
 * (the file itself for parquet, else its CSV or JSON Lines rendition, made on first request), with
 * the checks of a file download (the order delivered). A version whose change file is still being
 * made (one made before change files existed) is answered like a rendition being made.
 */
export async function changeFileTarget(
  buyerId: string,
  orderId: string,
  name: string,
  version: number,
  format: RenditionFormat | undefined,
  sql: SqlRunner = sqlQuery,
): Promise<DownloadTarget> {
  checkNames(orderId, name);
  const query = Prisma.sql`
    SELECT true AS order_found, vt.id IS NOT NULL AS table_found,
      (SELECT json_build_object('pruned', v.pruned_at IS NOT NULL, 'file', v.change_file_id)
       FROM table_versions v WHERE v.table_id = vt.id AND v.version = ${version}) AS version
    ${scopedTable(orderId, buyerId, name)}`;
  const [row] = await sql<Found & { version: { pruned: boolean; file: string | null } | null }>(
    query.text,
    query.values,
  );
  foundOrThrow(row, orderId, name);
  if (!row!.version || row!.version.pruned) throw versionNotFound(name, version);
  if (!row!.version.file) {
    throw new AppError(
      "rendition_pending",
      `The change file of ${name} version ${version} is being made. Ask again in ${formatSeconds(RENDITION_RETRY_AFTER_SECONDS)}.`,
      { "Retry-After": String(RENDITION_RETRY_AFTER_SECONDS) },
    );
  }
  return downloadTargetFor(buyerId, orderId, row!.version.file, format ?? "parquet", sql);
}
