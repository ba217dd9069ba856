import { createHash } from "node:crypto";
import { now } from "../clock";
import { sqlQuery, type Prisma } from "../db/client";
import { RENDITION_CONTENT_TYPES, subsetName, type RenditionFormat } from "../data-formats";
import { AppError, type ErrorCode } from "../errors";
import { countSubsetRefused } from "../metrics";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { runBuyerQuery } from "./engine-run";
import { readableParts } from "./files";
import { withCachedCopies } from "./query-cache";
import { resolveTableRequest, rowsOrder, type TableRequest } from "./table-request";
import { formatSeconds } from "../format";

/**
 * `GET /orders/{id}/tables/{name}/subset` (contract Part 7): every matching row of a version, the
 * columns asked, as a file (Parquet, CSV or JSON Lines) made by a job (./subset-job.ts) and kept
 * SUBSET_KEEP_HOURS. The request is checked as rows are (same errors, the filter bound in the
 * query pool before anything is queued); the same request (order, table, version, columns, where,
 * format) within that time finds the same file. A subset belongs to one order: another order's
 * identical request is another subset, and every answer first checks the buyer's order is delivered.
 *
 * Fair shares (contract Part 8): an account has at most SUBSETS_PER_ACCOUNT subsets pending (queued
 * or being made), counted from the subset rows in the database, so the bound holds across server
 * instances; a new one past it is 429 too_many_queries. The worker takes them in turn across
 * accounts (./subset-job.ts) and the kept files of an account fit its quota (./subset-quota.ts).
 */

/** How long a subset is kept and reused after it was asked for. */
export const SUBSET_KEEP_HOURS = 24;
/** A client asked for a subset being made: ask again after this long. */
export const SUBSET_RETRY_AFTER_SECONDS = 5;
/** Subsets an account may have queued or being made at once. */
export const SUBSETS_PER_ACCOUNT = 2;

export type SubsetRequest = TableRequest & {
  format: RenditionFormat;
};

/** A ready subset, as a download serves it. */
export type SubsetFile = { id: string; name: string; contentType: string; storageKey: string };

type SubsetRow = {
  id: string;
  status: "pending" | "ready" | "failed";
  storageKey: string | null;
  errorCode: string | null;
  error: string | null;
};

/** The ready subset for the request; else it is queued (or already being made) and answered 202 rendition_pending. */
export function subsetFile(request: SubsetRequest): Promise<SubsetFile> {
  return withCachedCopies(() => requestedSubset(request));
}

async function requestedSubset(request: SubsetRequest): Promise<SubsetFile> {
  const { table, version, parts, select } = await resolveTableRequest(request);
  // Normalized: no columns and every column in the version's order are one request.
  const requestKey = createHash("sha256")
    .update(JSON.stringify([request.orderId, table.id, version.version, select, request.where ?? null, request.format]))
    .digest("hex");
  const name = subsetName(table.name, version.version, request.format);

  const found = await liveSubset(request.orderId, requestKey);
  if (found) return answer(found, name, request.format);
  // Refused before the check below spends engine time; counted again under the account's lock.
  refuseOverShare((await sqlQuery<{ pending: number }>(PENDING_SUBSETS, [request.buyerId]))[0]?.pending ?? 0);
  const input = {
    files: await readableParts(table, version.version, parts),
    columns: version.columns,
    select,
    where: request.where,
    ...rowsOrder(table),
  };
  // What rows would refuse is refused now, not after a job: the filter checked and bound, no row read.
  await runBuyerQuery({ account: request.buyerId, door: "subset" }, "subsetCheck", input, input.files);
  const made = await jobTransaction(async (tx) => {
    // One account's requests one at a time (every instance): identical requests at once queue one job
    // (the second waits here, then finds the first's row), and the count and the insert are one step.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`subsets:${request.buyerId}`}, 0))`;
    const [existing] = await tx.$queryRawUnsafe<SubsetRow[]>(LIVE_SUBSET, request.orderId, requestKey, now());
    if (existing) return existing;
    await refuseOverShareIn(tx, request.buyerId);
    const created = await tx.tableSubset.create({
      data: {
        orderId: request.orderId,
        tableId: table.id,
        version: version.version,
        columns: select,
        where: request.where ?? null,
        format: request.format,
        requestKey,
        expiresAt: new Date(now().getTime() + SUBSET_KEEP_HOURS * 3600_000),
      },
      select: { id: true, status: true },
    });
    await sendJob(QUEUES.tableSubset, { subsetId: created.id }, { tx });
    return { ...created, storageKey: null, errorCode: null, error: null };
  });
  return answer(made, name, request.format);
}

const LIVE_SUBSET = `SELECT id, status, storage_key AS "storageKey", error_code AS "errorCode", error
  FROM table_subsets WHERE order_id = $1 AND request_key = $2 AND expires_at > $3
  ORDER BY created_at DESC LIMIT 1`;

/** The account's subsets queued or being made, over all its orders. */
const PENDING_SUBSETS = `SELECT count(*)::int AS pending FROM table_subsets s JOIN orders o ON o.id = s.order_id
  WHERE o.buyer_id = $1 AND s.status = 'pending'`;

async function refuseOverShareIn(tx: Prisma.TransactionClient, buyerId: string): Promise<void> {
  const [counted] = await tx.$queryRawUnsafe<{ pending: number }[]>(PENDING_SUBSETS, buyerId);
  refuseOverShare(counted?.pending ?? 0);
}

function refuseOverShare(pending: number): void {
  if (pending < SUBSETS_PER_ACCOUNT) return;
  countSubsetRefused();
  throw new AppError(
    "too_many_queries",
    `${pending} of your subsets are being made, the most an account may have at once (${SUBSETS_PER_ACCOUNT}): ` +
      `ask again in ${SUBSET_RETRY_AFTER_SECONDS} seconds, or once one of them is ready.`,
    { "Retry-After": String(SUBSET_RETRY_AFTER_SECONDS) },
  );
}

function liveSubset(orderId: string, requestKey: string): Promise<SubsetRow | undefined> {
  return sqlQuery<SubsetRow>(LIVE_SUBSET, [orderId, requestKey, now()]).then((rows) => rows[0]);
}

/**
 * A ready subset's file; a pending one's 202; a failed one's error, said once: the row goes, so
 * the same request asked again makes it anew.
 */
async function answer(subset: SubsetRow, name: string, format: RenditionFormat): Promise<SubsetFile> {
  if (subset.status === "ready" && subset.storageKey) {
    // Its last use, which the account's quota removes the least recent of first.
    await sqlQuery(`UPDATE table_subsets SET last_used_at = $2 WHERE id = $1`, [subset.id, now()]);
    return { id: subset.id, name, contentType: RENDITION_CONTENT_TYPES[format], storageKey: subset.storageKey };
  }
  if (subset.status === "failed") {
    await sqlQuery(`DELETE FROM table_subsets WHERE id = $1 AND status = 'failed'`, [subset.id]);
    throw new AppError((subset.errorCode ?? "query_timeout") as ErrorCode, subset.error ?? "The subset failed.");
  }
  throw new AppError(
    "rendition_pending",
    `The subset ${name} is being made. Ask again in ${formatSeconds(SUBSET_RETRY_AFTER_SECONDS)}.`,
    { "Retry-After": String(SUBSET_RETRY_AFTER_SECONDS) },
  );
}
