import { filePreview, type Preview } from "../datasets/access";
import type { Column } from "../datasets/profile";
import type { Json } from "../engine/preview-values";
import { db } from "../db/client";
import { tableNotFound } from "./queries";
import { versionPoints, versionQualities, type VersionPoint, type VersionQualityView } from "./quality-views";

/**
 * An order's tables as the dashboard and a share page show them: each table's current version and
 * its history, newest first, with what changed and the change file to download. Scoped by the
 * buyer's id like every order read; pruned versions are left out, as in the API.
 */

export type Changes = { inserted: number; updated: number; deleted: number };

export type VersionSummary = {
  version: number;
  createdAt: Date;
  rows: number;
  parts: number;
  bytes: number;
  changes: Changes | null;
  /** The version's change file (a file of the order, downloadable and previewable by id). */
  changeFileId: string | null;
} & VersionQualityView;

export type TableSummary = {
  name: string;
  mode: "snapshot" | "append";
  key: string[];
  version: number | null;
  rows: number | null;
  updatedAt: Date | null;
  /** Versions kept, newest first, at most the number asked for. */
  versions: VersionSummary[];
  /** How many versions are kept in all (the history may show fewer). */
  versionCount: number;
  /** Rows and changes of its latest kept versions, oldest first, for the versions chart. */
  chart: VersionPoint[];
};

/** The tables of one of the buyer's orders, by name, with up to `historyLength` versions each. */
export async function orderTables(buyerId: string, orderId: string, historyLength = 10): Promise<TableSummary[]> {
  const tables = await db().orderTable.findMany({
    where: { orderId, order: { buyerId } },
    orderBy: { name: "asc" },
    select: {
      id: true,
      name: true,
      mode: true,
      key: true,
      currentVersion: true,
      _count: { select: { versions: { where: { prunedAt: null } } } },
      versions: {
        where: { prunedAt: null },
        orderBy: { version: "desc" },
        take: historyLength,
        select: {
          version: true,
          createdAt: true,
          rows: true,
          changes: true,
          changeFileId: true,
          publicationId: true,
          quality: true,
        },
      },
    },
  });
  const publicationIds = tables.flatMap((table) => table.versions.map((version) => version.publicationId));
  const parts = await db().orderFile.groupBy({
    by: ["publicationId"],
    where: { publicationId: { in: publicationIds }, orderId },
    _count: { _all: true },
    _sum: { size: true },
  });
  const partsOf = new Map(parts.map((row) => [row.publicationId, row]));
  const [qualities, points] = await Promise.all([
    versionQualities(tables.flatMap((table) => table.versions)),
    versionPoints(tables.map((table) => table.id)),
  ]);
  return tables.map((table) => {
    const versions = table.versions.map((version) => ({
      version: version.version,
      createdAt: version.createdAt,
      rows: Number(version.rows),
      parts: partsOf.get(version.publicationId)?._count._all ?? 0,
      bytes: Number(partsOf.get(version.publicationId)?._sum.size ?? 0),
      changes: (version.changes as Changes | null) ?? null,
      changeFileId: version.changeFileId,
      ...qualities.get(version.publicationId)!,
    }));
    const current = versions.find((version) => version.version === table.currentVersion);
    return {
      name: table.name,
      mode: table.mode,
      key: table.key,
      version: table.currentVersion,
      rows: current?.rows ?? null,
      updatedAt: current?.createdAt ?? null,
      versions,
      versionCount: table._count.versions,
      chart: points.get(table.id) ?? [],
    };
  });
}

/**
 * The first `limit` rows of a table as of its current version: the stored previews of its parts in
 * order (an append table's oldest versions first), each row placed under the current version's
 * columns (a column added later reads as null in older parts). Downloadable orders only, like a
 * file's preview.
 */
export async function tablePreview(buyerId: string, orderId: string, name: string, limit: number): Promise<Preview> {
  const table = await db().orderTable.findFirst({
    where: { orderId, name, order: { buyerId } },
    select: { mode: true, currentVersion: true, id: true },
  });
  if (!table || table.currentVersion === null) throw tableNotFound(orderId, name);
  const current = await db().tableVersion.findUniqueOrThrow({
    where: { tableId_version: { tableId: table.id, version: table.currentVersion } },
    select: { rows: true, columns: true },
  });
  const versions = await db().tableVersion.findMany({
    where: {
      tableId: table.id,
      prunedAt: null,
      ...(table.mode === "snapshot" ? { version: table.currentVersion } : { version: { lte: table.currentVersion } }),
    },
    orderBy: { version: "asc" },
    select: { publicationId: true },
  });
  const parts = await db().orderFile.findMany({
    where: { orderId, publicationId: { in: versions.map((version) => version.publicationId) } },
    select: { id: true, publicationId: true, name: true },
  });
  const order = new Map(versions.map((version, index) => [version.publicationId, index]));
  parts.sort((a, b) => order.get(a.publicationId!)! - order.get(b.publicationId!)! || a.name.localeCompare(b.name));
  const columns = current.columns as Column[];
  const rows: Json[][] = [];
  for (const part of parts) {
    if (rows.length >= limit) break;
    const preview = await filePreview(buyerId, orderId, part.id, limit - rows.length);
    const at = columns.map((column) => preview.columns.findIndex((own) => own.name === column.name));
    for (const row of preview.rows) rows.push(at.map((index) => (index < 0 ? null : (row[index] ?? null))));
  }
  return { columns, rows, total_rows: Number(current.rows) };
}
