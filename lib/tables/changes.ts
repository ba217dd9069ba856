import { createReadStream } from "node:fs";
import path from "node:path";
import { db, type Prisma } from "../db/client";
import { duckdbMessageFor, withTempDir } from "../engine/engine";
import { runEngineTask } from "../engine/engine-pool";
import type { Profile } from "../engine/engine-tasks";
import { RENDITION_CONTENT_TYPES } from "../data-formats";
import { withoutNul } from "../engine/preview-values";
import { localCopy } from "../datasets/source";
import { errorFields, logger } from "../log";
import { fileStorage, type StoredObject } from "../storage";

/**
 * A version's change file (contract Part 4, "Change feed"): made by the worker in an engine process
 * over the Parquet renditions of the previous version's parts and of the new ones
 * (lib/engine/change-feed.ts), stored through the storage driver, and recorded as a file of the
 * order of origin `change_feed` (never in the order's files list; downloaded through its version,
 * with CSV and JSON Lines renditions made on first request as for any file).
 */

export type Changes = { inserted: number; updated: number; deleted: number };
export type ChangeFile = { stored: StoredObject; changes: Changes; profile: Profile; name: string };

type Part = { renditions: { storageKey: string | null }[] };

/** Makes and stores the change file of `version`; a failure DuckDB gives is a sentence, a store's failure is thrown. */
export async function makeChangeFile(input: {
  orderId: string;
  table: { name: string; mode: "snapshot" | "append"; key: string[] };
  version: number;
  parts: Part[];
  columns: string[];
  /** The previous version's parts and columns (none for a first version). */
  previous: { parts: Part[]; columns: string[] } | null;
}): Promise<ChangeFile | { error: string }> {
  return withTempDir(async (workDir) => {
    const copy = async (parts: Part[], prefix: string) => {
      const paths = [];
      for (const [index, part] of parts.entries()) {
        paths.push(await localCopy(part.renditions[0]!.storageKey!, workDir, `${prefix}-${index}.parquet`));
      }
      return paths;
    };
    const current = await copy(input.parts, "current");
    // An append version's changes are its rows: it is compared with nothing.
    const previous =
      input.previous && input.table.mode === "snapshot" ? await copy(input.previous.parts, "previous") : null;
    const target = path.join(workDir, "changes.parquet");
    let made;
    try {
      made = await runEngineTask(
        "changeFile",
        {
          current,
          previous,
          columnNames: input.columns,
          previousColumns: input.previous?.columns ?? [],
          key: input.table.key,
          target,
        },
        { directory: workDir, readable: [...current, ...(previous ?? [])] },
      );
    } catch (error) {
      logger().warn({ table: input.table.name, version: input.version, ...errorFields(error) }, "change file not made");
      return { error: `Its change file could not be made: ${duckdbMessageFor(error, "the parts", [workDir])}` };
    }
    const stored = await fileStorage().put(createReadStream(target), input.orderId, {
      contentType: RENDITION_CONTENT_TYPES.parquet,
    });
    return {
      stored,
      changes: {
        inserted: made.counts.insert,
        updated: made.counts.update_postimage,
        deleted: made.counts.delete,
      },
      profile: made.profile,
      name: `${input.table.name}.v${input.version}.changes.parquet`,
    };
  });
}

/** Records a change file as a file of the order (origin change_feed), profiled already, in `tx`. */
export async function recordChangeFile(
  tx: Prisma.TransactionClient,
  orderId: string,
  file: ChangeFile,
): Promise<string> {
  const row = await tx.orderFile.create({
    data: {
      orderId,
      origin: "change_feed",
      name: file.name,
      size: BigInt(file.stored.size),
      contentType: RENDITION_CONTENT_TYPES.parquet,
      sha256: file.stored.sha256,
      storageKey: file.stored.key,
      format: "parquet",
      profileStatus: "ready",
      rows: BigInt(file.profile.rows),
      columns: withoutNul(file.profile.columns),
      preview: withoutNul(file.profile.preview) as Prisma.InputJsonValue,
      profiledAt: new Date(),
    },
    select: { id: true },
  });
  return row.id;
}

/** Removes a change file's object that no row came to point at (its version was made by another worker). */
export async function discardChangeFile(file: ChangeFile): Promise<void> {
  await fileStorage()
    .delete(file.stored.key)
    .catch((error: unknown) =>
      logger().warn({ key: file.stored.key, ...errorFields(error) }, "change file not removed"),
    );
}

/** The parts (with their Parquet renditions) and columns of a table's version. */
export async function versionParts(tableId: string, version: number) {
  const row = await db().tableVersion.findUnique({
    where: { tableId_version: { tableId, version } },
    select: { columns: true, prunedAt: true, publicationId: true },
  });
  if (!row || row.prunedAt) return null;
  const parts = await db().orderFile.findMany({
    where: { publicationId: row.publicationId },
    orderBy: { name: "asc" },
    select: { renditions: { where: { format: "parquet", status: "ready" }, select: { storageKey: true } } },
  });
  return { parts, columns: (row.columns as { name: string }[]).map((column) => column.name) };
}
