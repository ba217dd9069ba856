import { Prisma, sqlQuery, type SqlRunner } from "../db/client";
import { isTypedId } from "../ids";
import { isoUtc, orderNotFound, TABLE_JSON } from "../orders/queries";
import type { z } from "zod";
import type { tableSchema } from "../schemas/api";
import { TABLE_NAME_PATTERN } from "./names";
import { tableNotFound } from "./queries";

/**
 * A table described whole for an agent (the MCP server's describe_table and get_changes): the
 * table, its latest versions, the quality report of its current version and its recent notices,
 * in one statement behind the tenant boundary of lib/tables/queries.ts (scoped by the buyer;
 * another buyer's order reads as missing).
 */

/** How many of the newest versions a description lists (the versions list pages through all). */
export const DESCRIBED_VERSIONS = 20;

type TableView = z.infer<typeof tableSchema>;
type Changes = { inserted: number; updated: number; deleted: number };

export type VersionSummary = {
  version: number;
  created_at: string;
  rows: number;
  changes: Changes | null;
  quality_status: "passed" | "warned" | "released";
};

export type TableDescription = {
  table: TableView;
  versions: VersionSummary[];
  version_count: number;
  quality_report: Record<string, unknown> | null;
  /** The table's notices of the last 90 days, as the Table object carries them. */
  notices: TableView["notices"];
};

const VERSION_SUMMARY_JSON = Prisma.sql`json_build_object(
  'version', v.version,
  'created_at', ${isoUtc(Prisma.sql`v.created_at`)},
  'rows', v.rows,
  'changes', v.changes,
  'quality_status', COALESCE(v.quality->>'status', 'passed')
)`;

/**
 * The buyer's table `name` of order `orderId` with its newest versions (or, with `sinceVersion`,
 * the versions after it, oldest first), its current version's quality report and its notices (the Table's).
 */
export async function describeTable(
  buyerId: string,
  orderId: string,
  name: string,
  options: { sinceVersion?: number; versions?: number } = {},
  sql: SqlRunner = sqlQuery,
): Promise<TableDescription> {
  if (!isTypedId("ord", orderId)) throw orderNotFound(orderId);
  if (!TABLE_NAME_PATTERN.test(name)) throw tableNotFound(orderId, name);
  const limit = options.versions ?? DESCRIBED_VERSIONS;
  const since = options.sinceVersion;
  const versionsOf =
    since === undefined
      ? Prisma.sql`SELECT * FROM table_versions v WHERE v.table_id = vt.id AND v.pruned_at IS NULL
        ORDER BY v.version DESC LIMIT ${limit}`
      : Prisma.sql`SELECT * FROM table_versions v WHERE v.table_id = vt.id AND v.pruned_at IS NULL
        AND v.version > ${since} ORDER BY v.version LIMIT ${limit}`;
  const versionOrder = since === undefined ? Prisma.sql`v.version DESC` : Prisma.sql`v.version`;
  const query = Prisma.sql`
    SELECT vt.id IS NOT NULL AS table_found,
      (SELECT json_build_object('table', ${TABLE_JSON}, 'report', p.report)::text
       FROM order_tables t
       LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = t.current_version
       LEFT JOIN table_publications p ON p.id = v.publication_id
       WHERE t.id = vt.id) AS described,
      COALESCE((SELECT json_agg(${VERSION_SUMMARY_JSON} ORDER BY ${versionOrder}) FROM (${versionsOf}) v), '[]'::json)::text
        AS versions,
      (SELECT count(*)::int FROM table_versions v WHERE v.table_id = vt.id AND v.pruned_at IS NULL) AS version_count
    FROM orders o
    LEFT JOIN order_tables vt ON vt.order_id = o.id AND vt.name = ${name}
    WHERE o.id = ${orderId} AND o.buyer_id = ${buyerId}`;
  const [row] = await sql<{
    table_found: boolean;
    described: string | null;
    versions: string;
    version_count: number;
  }>(query.text, query.values);
  if (!row) throw orderNotFound(orderId);
  if (!row.table_found || !row.described) throw tableNotFound(orderId, name);
  const described = JSON.parse(row.described) as { table: TableView; report: Record<string, unknown> | null };
  return {
    table: described.table,
    versions: JSON.parse(row.versions) as VersionSummary[],
    version_count: row.version_count,
    quality_report: described.report ?? null,
    notices: described.table.notices,
  };
}
