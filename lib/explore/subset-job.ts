import { createReadStream, promises as fs } from "node:fs";
import path from "node:path";
import { now } from "../clock";
import { sqlQuery } from "../db/client";
import { RENDITION_CONTENT_TYPES, type RenditionFormat } from "../data-formats";
import { withTempDir } from "../engine/engine";
import { EngineProcessEnded, runEngineTask } from "../engine/engine-pool";
import { AppError } from "../errors";
import { errorFields, logger } from "../log";
import { notDelivered } from "../orders/queries";
import { QUEUES, sendJob } from "../queue";
import type { OrderStatus } from "../schemas/order-status";
import { driverOf, fileStorage, localStorage } from "../storage";
import { S3Storage } from "../storage/s3";
import { versionNotFound } from "../tables/queries";
import type { QueryColumn, QueryFile } from "../engine/query-tasks";
import { versionFiles, type OrderTable } from "./files";
import { withCachedCopies } from "./query-cache";
import { storeWithinQuota } from "./subset-quota";
import { rowsOrder } from "./table-request";

/**
 * The subset's job (./subsets.ts): every matching row of the version written by DuckDB in one of the
 * worker's engine processes, under the query sandbox's rules (it reads only the version's parts of
 * that order and writes only its own temporary directory), within DATASET_SUBSET_SECONDS of engine
 * time, then stored through the storage driver. What the query itself could not do (its time, its
 * memory, a value DuckDB refused) fails the subset with the error the buyer is then answered with;
 * a store or database away throws, and the job is tried again. The sweep removes subsets past their
 * time, object then row, and fails those whose job was lost.
 *
 * Turns across accounts (contract Part 8): a job does not make the subset it was sent for but takes
 * one: among the pending subsets no worker holds, the oldest of the account whose last subset was
 * taken longest ago (an account never served first). Every subset asked for sends one job, so there
 * are as many jobs as subsets to make, and the queue stays one FIFO of interchangeable jobs: pg-boss
 * keeps its retries and expiry, no queue per account is made, and an account's 2 pending subsets
 * (./subsets.ts) wait behind every other account's next one. A job that throws gives its subset back.
 */

/** Engine time a subset may use (`DATASET_SUBSET_SECONDS`, default 600): a background job, but bounded. */
export function subsetTimeLimitMs(): number {
  const seconds = Number(process.env.DATASET_SUBSET_SECONDS || 600);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`DATASET_SUBSET_SECONDS must be a positive number, got "${process.env.DATASET_SUBSET_SECONDS}".`);
  }
  return seconds * 1000;
}

/** A subset still pending this long after it was asked for lost its job (the job's expiry and retries are within it). */
const LOST_AFTER_MS = 4 * 3600_000;
/** A subset taken this long ago lost its worker (the table-subset job's expiry in lib/queue): another job may take it. */
const TAKEN_FOR_MS = 3600_000;

type Subset = {
  id: string;
  buyerId: string;
  orderId: string;
  orderStatus: OrderStatus;
  table: OrderTable;
  version: number;
  kept: boolean;
  /** The version's columns in the table's own types (none: the version is no longer kept). */
  versionColumns: QueryColumn[];
  columns: string[];
  where: string | null;
  format: RenditionFormat;
  status: string;
};

/**
 * How soon a job looks again when every waiting subset's account already has one being made: one
 * such job at a time (its singleton key), so blocked accounts cost a look every few seconds.
 */
const RECHECK_AFTER_MS = 2_000;

/**
 * One job: the next subset in turn across accounts (whichever subset the job was sent for). An
 * account has at most one subset being made at a time, so two of one account's whole-table subsets
 * never take both of the worker's engine processes: a subset of such an account waits, and a job
 * looks again shortly.
 */
export async function handleSubsetJob(): Promise<void> {
  const taken = await takeNextSubset();
  if (!taken.id) {
    if (taken.blocked) {
      await sendJob(
        QUEUES.tableSubset,
        {},
        { startAfter: new Date(now().getTime() + RECHECK_AFTER_MS), singletonKey: "subset-recheck" },
      );
    }
    return;
  }
  try {
    await makeSubset(taken.id);
  } catch (error) {
    // For the job's retry, or any other job, to take it again.
    await sqlQuery(`UPDATE table_subsets SET started_at = NULL WHERE id = $1 AND status = 'pending'`, [taken.id]);
    throw error;
  }
  // The account may have another waiting, which no other job will take now: look again at once.
  await sendJob(QUEUES.tableSubset, {}, { singletonKey: "subset-recheck" });
}

/**
 * Takes the next subset to make, of an account with none being made now, or none (`blocked`: some
 * wait, each of an account already served now). Two workers may choose the same one: the update
 * takes it only if still free (read again under its row lock), and the loser, which did find one
 * free, chooses again (a few times: nothing taken also means nothing is waiting).
 */
async function takeNextSubset(at: Date = now()): Promise<{ id?: string; blocked: boolean }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const [taken] = await sqlQuery<{ id: string | null; free: boolean; blocked: boolean }>(
      `WITH waiting AS (
         SELECT s.id, s.created_at, o.buyer_id FROM table_subsets s JOIN orders o ON o.id = s.order_id
         WHERE s.status = 'pending' AND (s.started_at IS NULL OR s.started_at <= $1)
       ), served AS (
         SELECT o.buyer_id, max(s.started_at) AS served_at,
                coalesce(bool_or(s.status = 'pending' AND s.started_at > $1), false) AS being_made
         FROM table_subsets s JOIN orders o ON o.id = s.order_id
         WHERE o.buyer_id IN (SELECT buyer_id FROM waiting) GROUP BY o.buyer_id
       ), next AS (
         SELECT w.id FROM waiting w JOIN served USING (buyer_id) WHERE NOT served.being_made
         ORDER BY served.served_at NULLS FIRST, w.created_at, w.id LIMIT 1
       ), took AS (
         UPDATE table_subsets SET started_at = $2 WHERE id = (SELECT id FROM next)
           AND status = 'pending' AND (started_at IS NULL OR started_at <= $1)
         RETURNING id
       )
       SELECT (SELECT id FROM took) AS id, EXISTS (SELECT 1 FROM next) AS free,
              EXISTS (SELECT 1 FROM waiting) AS blocked`,
      [new Date(at.getTime() - TAKEN_FOR_MS), at],
    );
    if (taken?.id) return { id: taken.id, blocked: false };
    if (!taken?.blocked) return { blocked: false };
    // Waiting, and none free: every waiting subset's account has one being made.
    if (!taken.free) return { blocked: true };
    // One was free, but another worker took it meanwhile: choose again.
  }
  return { blocked: false };
}

/** Makes one pending subset: ready with its stored object, or failed with the buyer's error. */
async function makeSubset(subsetId: string): Promise<"ready" | "failed" | "skipped"> {
  const [subset] = await sqlQuery<Subset>(
    `SELECT s.id, o.buyer_id AS "buyerId", s.order_id AS "orderId", o.status AS "orderStatus", s.version, s.columns, s."where", s.format, s.status,
       json_build_object('id', t.id, 'name', t.name, 'mode', t.mode, 'key', t.key, 'currentVersion', t.current_version) AS "table",
       v.version IS NOT NULL AS kept,
       coalesce(v.columns, '[]') AS "versionColumns"
     FROM table_subsets s JOIN orders o ON o.id = s.order_id JOIN order_tables t ON t.id = s.table_id
     LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = s.version AND v.pruned_at IS NULL
     WHERE s.id = $1`,
    [subsetId],
  );
  if (!subset || subset.status !== "pending") return "skipped";
  try {
    if (subset.orderStatus !== "delivered") throw notDelivered(subset.orderId, subset.orderStatus, "tables");
    if (!subset.kept) throw versionNotFound(subset.table.name, subset.version);
    return await writeSubset(subset);
  } catch (error) {
    const failure = failureOf(error);
    if (!failure) throw error;
    logger().info({ subsetId, code: failure.code }, "subset failed");
    await sqlQuery(
      `UPDATE table_subsets SET status = 'failed', error_code = $2, error = $3 WHERE id = $1 AND status = 'pending'`,
      [subsetId, failure.code, failure.detail],
    );
    return "failed";
  }
}

/** On S3 the parts are read from the query cache's local copies, pinned while the engine reads them. */
function writeSubset(subset: Subset) {
  return withCachedCopies(async () => writeSubsetOf(subset, (await versionFiles(subset.table, subset.version)).files));
}

async function writeSubsetOf(subset: Subset, files: QueryFile[]) {
  return withTempDir(async (directory) => {
    const target = path.join(directory, `subset.${subset.format}`);
    const input = {
      files,
      columns: subset.versionColumns,
      select: subset.columns,
      where: subset.where ?? undefined,
      ...rowsOrder(subset.table),
      format: subset.format,
      target,
    };
    const readable = files.map((file) => file.path);
    const { rows } = await runEngineTask("tableSubset", input, {
      directory,
      readable,
      timeLimitMs: subsetTimeLimitMs(),
    });
    const { size } = await fs.stat(target);
    return storeWithinQuota({ id: subset.id, buyerId: subset.buyerId, size }, removeSubset, async () => {
      const stored = await fileStorage().put(createReadStream(target), subset.orderId, {
        contentType: RENDITION_CONTENT_TYPES[subset.format],
      });
      const updated = await sqlQuery(
        `UPDATE table_subsets SET status = 'ready', storage_key = $2, size = $3, sha256 = $4, rows = $5, last_used_at = $6
         WHERE id = $1 AND status = 'pending' RETURNING id`,
        [subset.id, stored.key, stored.size, stored.sha256, rows, now()],
      );
      // Swept or made by another run meanwhile: this copy has no row to serve it.
      if (updated.length === 0) await removeObject(stored.key, subset.id);
      return updated.length ? "ready" : "skipped";
    });
  });
}

/** The buyer's error for what the query could not do; undefined for what a retry may fix. */
function failureOf(error: unknown): { code: string; detail: string } | undefined {
  const limit = `${Math.round(subsetTimeLimitMs() / 1000)} seconds`;
  const narrow = "narrow it (a filter, fewer columns) and ask again.";
  if (error instanceof EngineProcessEnded) {
    return error.reason === "crashed"
      ? { code: "invalid_filter", detail: `The data engine stopped on this subset: ${narrow}` }
      : {
          code: "query_timeout",
          detail: `The subset needed more than ${limit} of engine time or more memory: ${narrow}`,
        };
  }
  if (!(error instanceof AppError) || error.code === "rendition_pending") return undefined;
  if (error.code === "query_timeout")
    return {
      code: error.code,
      detail: `The subset needed more than ${limit} of engine time, memory or spill: ${narrow}`,
    };
  return { code: error.code, detail: error.message };
}

/** Subsets past their time go, object then row; pending ones whose job was lost are failed (asking again remakes them). */
export async function sweepSubsets(at: Date = now()): Promise<{ removed: number; lost: number }> {
  const expired = await sqlQuery<{ id: string; storageKey: string | null }>(
    `SELECT id, storage_key AS "storageKey" FROM table_subsets WHERE expires_at <= $1 ORDER BY expires_at LIMIT 1000`,
    [at],
  );
  let removed = 0;
  for (const subset of expired) if (await removeSubset(subset)) removed++;
  const lost = await sqlQuery(
    `UPDATE table_subsets SET status = 'failed', error_code = 'query_timeout',
       error = 'The subset could not be made in time (its job was lost): ask again to make it anew.'
     WHERE status = 'pending' AND created_at < $1 RETURNING id`,
    [new Date(at.getTime() - LOST_AFTER_MS)],
  );
  return { removed, lost: lost.length };
}

/** Removes a subset, object then row; false when the store could not (the row stays for the next sweep). */
async function removeSubset(subset: { id: string; storageKey: string | null }): Promise<boolean> {
  if (subset.storageKey && !(await removeObject(subset.storageKey, subset.id))) return false;
  await sqlQuery(`DELETE FROM table_subsets WHERE id = $1`, [subset.id]);
  return true;
}

/** Removes a subset's stored object; false (logged) when the store could not, so the row stays for the next sweep. */
async function removeObject(location: string, subsetId: string): Promise<boolean> {
  try {
    // Where the object is, whichever driver new files go to now.
    await (driverOf(location) === "s3" ? new S3Storage() : localStorage()).delete(location);
    return true;
  } catch (error) {
    logger().warn({ subsetId, ...errorFields(error) }, "subset object not removed");
    return false;
  }
}
