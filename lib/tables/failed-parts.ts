import { FAILED_PARTS_KEPT_DAYS } from "../contract";
import { db } from "../db/client";
import { now } from "../clock";
import { errorFields, logger } from "../log";
import { driverOf, fileStorage } from "../storage";

/**
 * The parts of failed and rejected publications (contract Part 8). No buyer ever sees them
 * (lib/orders/seen-files.ts); the operator does, in `table:versions`, for FAILED_PARTS_KEPT_DAYS
 * after the decision, to look into what went wrong. Then a sweep removes them. A part published
 * again under its name is replaced at once (./publish.ts).
 */

type FailedPart = {
  id: string;
  publicationId: string | null;
  storageKey: string;
  registered: boolean;
  renditions: { storageKey: string | null }[];
};

const FAILED_PART_SELECT = {
  id: true,
  publicationId: true,
  storageKey: true,
  registered: true,
  renditions: { select: { storageKey: true } },
} as const;

/** The parts of the table's failed publications that hold any of `names` (no version points at them). */
export async function failedPartsNamed(tableId: string, names: string[]): Promise<FailedPart[]> {
  return db().orderFile.findMany({
    where: { origin: "delivered", name: { in: names }, publication: { tableId, status: "failed" } },
    select: FAILED_PART_SELECT,
  });
}

/** At most this many parts a sweep; the next sweep takes the rest. */
const SWEEP_BATCH = 500;

/**
 * Removes the parts of publications that failed or were rejected more than FAILED_PARTS_KEPT_DAYS
 * before `at`, with their renditions; the publications stay in `table:versions`, with their
 * reasons and no files. Run hourly by the worker (lib/jobs/registry.ts). Returns the parts removed.
 */
export async function sweepFailedParts(at: Date = now()): Promise<number> {
  const before = new Date(at.getTime() - FAILED_PARTS_KEPT_DAYS * 86_400_000);
  const parts = await db().orderFile.findMany({
    where: { publication: { status: "failed", finishedAt: { lte: before } } },
    select: FAILED_PART_SELECT,
    take: SWEEP_BATCH,
  });
  await removeFailedParts(parts);
  if (parts.length > 0) logger().info({ parts: parts.length }, "failed publications' parts removed");
  return parts.length;
}

/**
 * Removes failed parts: rows first (their renditions go with them), then their objects, as a prune
 * does (a run killed between leaves at worst an object no row points at). Objects registered from
 * the seller's bucket are the seller's and stay; so does an object another row still points at.
 */
export async function removeFailedParts(parts: FailedPart[]): Promise<void> {
  if (parts.length === 0) return;
  await db().orderFile.deleteMany({ where: { id: { in: parts.map((part) => part.id) } } });
  const objects = [
    ...new Set(
      parts.flatMap((part) => [
        ...(part.registered ? [] : [part.storageKey]),
        ...part.renditions.flatMap((rendition) => (rendition.storageKey ? [rendition.storageKey] : [])),
      ]),
    ),
  ];
  const [files, renditions] = await Promise.all([
    db().orderFile.findMany({ where: { storageKey: { in: objects } }, select: { storageKey: true } }),
    db().fileRendition.findMany({ where: { storageKey: { in: objects } }, select: { storageKey: true } }),
  ]);
  const stillUsed = new Set([...files, ...renditions].map((row) => row.storageKey));
  for (const key of objects) {
    // Objects of another driver than the configured one (before storage:migrate switched) are left.
    if (stillUsed.has(key) || driverOf(key) !== fileStorage().driver) continue;
    await fileStorage()
      .delete(key)
      .catch((error: unknown) => logger().warn({ key, ...errorFields(error) }, "failed part's object not deleted"));
  }
}
