import path from "node:path";
import { db, Prisma, type TableMode } from "../db/client";
import { formatFromName } from "../data-formats";
import { AppError } from "../errors";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import {
  checkNewFile,
  discardStoredBytes,
  findOrderForOperator,
  quoted,
  recordFileRow,
  storeFileBytes,
  type AddedFile,
  type FileSource,
} from "../orders/files";
import { hashStream, fileStorage } from "../storage";
import { failedPartsNamed, removeFailedParts } from "./failed-parts";
import { tableNameProblem } from "./names";

/**
 * Publishing a table's data (contract Part 4, `table:publish` and `order:add-file`): the parts are
 * checked, stored and listed as files at once, and a publication starts, which the worker makes the
 * table's next version once every part is profiled and checked (./pipeline.ts). Every name is checked
 * before a byte is stored. A publish killed midway leaves a publication `uploading` whose stored
 * parts point at whole objects; the same publish run again resumes it: a part already stored with
 * the same bytes is not stored twice. A failed publication's part names can be published again:
 * its parts of those names are replaced (removed, then stored anew and read again).
 */

export type PartInput = { name?: string; contentType?: string; source: FileSource };
export type Published = { table: string; publication: string; files: AddedFile[] };

export async function publishTable(input: {
  orderId: string;
  table: string;
  parts: PartInput[];
  mode?: TableMode;
  key?: string[];
  signal?: AbortSignal;
  /** The table must be new (order:add-file's own table): a name taken meanwhile is table_conflict. */
  newTable?: boolean;
}): Promise<Published> {
  await findOrderForOperator(input.orderId);
  const problem = tableNameProblem(input.table);
  if (problem) throw new AppError("invalid_argument", `${quoted(input.table)} is not a valid table name: ${problem}.`);
  const key = input.key === undefined ? undefined : checkedKey(input.key);
  const parts = input.parts.map((part) => ({ ...part, name: partName(part) }));
  if (parts.length === 0) throw new AppError("invalid_argument", "A publication needs at least one part.");
  const seen = new Set<string>();
  for (const { name } of parts) {
    if (seen.has(name)) throw new AppError("invalid_argument", `Two parts are named ${quoted(name)}.`);
    seen.add(name);
    if (formatFromName(name).format === "binary") {
      throw new AppError(
        "invalid_argument",
        `${quoted(name)} is not a data file by its name (.csv, .tsv, .json, .jsonl, .parquet, optionally .gz): binary files belong to no table; add it with order:add-file.`,
      );
    }
  }

  // Everything is checked before anything is made: the table's mode and key, then every part's name.
  const existing = await existingTable(input.orderId, input.table, input.mode, key, input.newTable === true);
  const partNames = parts.map(({ name }) => name).sort();
  const unfinished = existing
    ? await db().tablePublication.findFirst({
        where: { tableId: existing.id, status: "uploading", partNames: { equals: partNames } },
        orderBy: { createdAt: "desc" },
        select: { id: true },
      })
    : null;
  // A run killed after its publication was complete and run again with the same parts: that publication.
  const completed = unfinished ? null : await completedPublication(existing, partNames, parts);
  if (completed) return { table: input.table, publication: completed.id, files: completed.files };
  // A failed publication's part names can be published again: its parts holding them are replaced.
  const replaced = existing ? await failedPartsNamed(existing.id, partNames) : [];
  const allowTakenBy = [...(unfinished ? [unfinished.id] : []), ...replaced.map((part) => part.publicationId!)];
  const checked = [];
  for (const part of parts) {
    const file = await checkNewFile(input.orderId, part.name, part.contentType, { allowTakenBy });
    checked.push({ ...part, ...file, contentTypeGiven: part.contentType !== undefined });
  }
  const table = existing ?? (await createTable(input.orderId, input.table, input.mode, key, input.newTable === true));
  const publication =
    unfinished ??
    (await db().tablePublication.create({ data: { tableId: table.id, partNames }, select: { id: true } }));
  await removeFailedParts(replaced);

  const storedBefore = new Map(
    (
      await db().orderFile.findMany({
        where: { publicationId: publication.id },
        select: {
          id: true,
          name: true,
          size: true,
          sha256: true,
          storageKey: true,
          registered: true,
          contentType: true,
        },
      })
    ).map((row) => [row.name, row]),
  );

  const files: AddedFile[] = [];
  for (const part of checked) {
    const before = storedBefore.get(part.name);
    if (before) {
      if (await sameBytes(before, part.source)) {
        files.push({
          id: before.id,
          name: before.name,
          size: Number(before.size),
          sha256: before.sha256,
          contentType: before.contentType,
        });
        continue;
      }
      // Changed since the run that stored it: replaced (row first, so no row points at a missing object).
      await db().orderFile.delete({ where: { id: before.id } });
      if (!before.registered)
        await fileStorage()
          .delete(before.storageKey)
          .catch(() => {});
    }
    // Named by publication and part: a run killed after storing a part and before recording it
    // stores it again under the same name, so nothing is stored twice.
    const stored = await storeFileBytes(
      input.orderId,
      part,
      part.source,
      input.signal,
      `${publication.id}-${part.name}`,
    );
    try {
      files.push(
        await jobTransaction((tx) =>
          recordFileRow(
            tx,
            input.orderId,
            { name: part.name, contentType: stored.contentType },
            stored,
            publication.id,
          ),
        ),
      );
    } catch (error) {
      await discardStoredBytes(stored);
      throw error;
    }
  }

  // Every part stored: the publication takes its place in the table's publishing order.
  await jobTransaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM order_tables WHERE id = ${table.id} FOR UPDATE`;
    const [place] = await tx.$queryRaw<{ next: number }[]>`
      SELECT COALESCE(max(seq), 0) + 1 AS next FROM table_publications WHERE table_id = ${table.id}`;
    const moved = await tx.tablePublication.updateMany({
      where: { id: publication.id, status: "uploading" },
      data: { status: "processing", seq: Number(place!.next) },
    });
    if (moved.count === 1) await sendJob(QUEUES.tablePublication, { publicationId: publication.id }, { tx });
  });
  return { table: input.table, publication: publication.id, files };
}

/**
 * The table's publication of exactly these part names whose every part holds the same bytes (files
 * given by path or location), already past uploading; null when there is none or any part differs.
 */
async function completedPublication(
  table: TableRow | null,
  partNames: string[],
  parts: (PartInput & { name: string })[],
): Promise<{ id: string; files: AddedFile[] } | null> {
  if (!table) return null;
  const publication = await db().tablePublication.findFirst({
    where: { tableId: table.id, status: { in: ["processing", "ready"] }, partNames: { equals: partNames } },
    orderBy: { createdAt: "desc" },
    select: {
      id: true,
      parts: { select: { id: true, name: true, size: true, sha256: true, storageKey: true, contentType: true } },
    },
  });
  if (!publication) return null;
  const stored = new Map(publication.parts.map((row) => [row.name, row]));
  for (const part of parts) {
    const before = stored.get(part.name);
    if (!before || !(await sameBytes(before, part.source))) return null;
  }
  return {
    id: publication.id,
    files: publication.parts.map((row) => ({
      id: row.id,
      name: row.name,
      size: Number(row.size),
      sha256: row.sha256,
      contentType: row.contentType,
    })),
  };
}

function partName(part: PartInput): string {
  if (part.name !== undefined) return part.name.trim();
  if ("path" in part.source) return path.basename(part.source.path);
  if ("location" in part.source) return part.source.location.split("/").pop() ?? "";
  throw new AppError("invalid_argument", "A part read from a stream needs a name.");
}

function checkedKey(key: string[]): string[] {
  const columns = key.map((column) => column.trim());
  if (columns.length === 0 || columns.some((column) => column === "")) {
    throw new AppError(
      "invalid_argument",
      "--key names one or more columns, separated by commas (e.g. id or sku,market).",
    );
  }
  if (new Set(columns).size !== columns.length) throw new AppError("invalid_argument", "--key names a column twice.");
  return columns;
}

const TABLE_SELECT = { id: true, mode: true, key: true } as const;
type TableRow = { id: string; mode: TableMode; key: string[] };

/** The order's table of that name, if it exists, checked against the mode and key asked for. */
async function existingTable(
  orderId: string,
  name: string,
  mode: TableMode | undefined,
  key: string[] | undefined,
  mustBeNew: boolean,
): Promise<TableRow | null> {
  const existing = await db().orderTable.findUnique({
    where: { orderId_name: { orderId, name } },
    select: TABLE_SELECT,
  });
  if (!existing) return null;
  if (mustBeNew) throw new AppError("table_conflict", `Order ${orderId} already has a table named ${name}.`);
  if (mode && mode !== existing.mode) {
    throw new AppError(
      "table_conflict",
      `Table ${name} is a ${existing.mode} table (its first publication fixed that); it cannot be published as ${mode}.`,
    );
  }
  if (key && key.join(",") !== existing.key.join(",")) {
    throw new AppError(
      "table_conflict",
      `Table ${name}'s key is ${existing.key.length ? existing.key.join(",") : "none"} (its first publication fixed that), not ${key.join(",")}.`,
    );
  }
  return existing;
}

/** A new table, its mode and key fixed by this first publication; one made meanwhile by another publish is used if it agrees. */
async function createTable(
  orderId: string,
  name: string,
  mode: TableMode | undefined,
  key: string[] | undefined,
  mustBeNew: boolean,
): Promise<TableRow> {
  try {
    return await db().orderTable.create({
      data: { orderId, name, mode: mode ?? "snapshot", key: key ?? [] },
      select: TABLE_SELECT,
    });
  } catch (error) {
    if (!(error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002")) throw error;
    const made = await existingTable(orderId, name, mode, key, mustBeNew);
    if (!made) throw error;
    return made;
  }
}

/** Whether a part stored by an earlier run holds the bytes given now (a stream cannot be read twice: never). */
async function sameBytes(
  before: { size: bigint; sha256: string; storageKey: string },
  source: FileSource,
): Promise<boolean> {
  if ("location" in source) return source.location === before.storageKey;
  if (!("path" in source)) return false;
  const now = await hashStream(source.open());
  return BigInt(now.size) === before.size && now.sha256 === before.sha256;
}
