import PgBoss from "pg-boss";
import { db, poolQuery, withAdvisoryLock, type Prisma } from "../db/client";
import { errorFields, logger } from "../log";
import { dropProcessSingleton, processSingleton } from "../singleton";

/**
 * The job queue: pg-boss on the application's PostgreSQL (schema `pgboss`, created on first
 * use). Jobs are sent by the app and the operator CLI, often inside the transaction of the change
 * that causes them (`tx`), so a change is never committed without its job; they are run by a
 * worker: inside the app's process by default (scripts/http-server.ts) or on its own
 * (`npm run worker`). pg-boss hands each job to one worker (SKIP LOCKED), and a job whose worker
 * died is retried once it expires.
 */
export const QUEUES = {
  /** Deliver one webhook message (one attempt; the next is a new job). */
  webhookDelivery: "webhook-delivery",
  /** Queue again the pending webhook messages whose job is gone (every minute). */
  webhookSweep: "webhook-sweep",
  /** Profile one delivered file (columns, rows, first rows) with DuckDB. */
  datasetProfile: "dataset-profile",
  /** Make one rendition (Parquet, CSV or JSONL) of a profiled file. */
  datasetRendition: "dataset-rendition",
  /** Take one table publication as far as it can go now: checks, change file, version (lib/tables). */
  tablePublication: "table-publication",
  /** Queue again every publication in processing whose job is gone (every few minutes). */
  tablePublicationSweep: "table-publication-sweep",
  /** Remove the parts of publications failed or rejected 7 days ago (hourly; lib/tables/failed-parts.ts). */
  failedPartsSweep: "failed-parts-sweep",
  /** Expiry reminders and key events, and retirements of replaced keys. */
  keyLifecycle: "key-lifecycle",
  /** An e-mail to send (expiry reminders, a disabled endpoint). */
  mail: "mail",
  /** Run one attempt of an export run (lib/exports): copy its files to the buyer's store. */
  exportRun: "export-run",
  /** Queue again the export runs whose job is gone or whose worker died (every minute). */
  exportSweep: "export-sweep",
  /** Make one subset of a table version (lib/explore/subset-job.ts). */
  tableSubset: "table-subset",
  /** Remove the subsets past their 24 hours, objects and rows; fail those whose job was lost (hourly). */
  tableSubsetSweep: "table-subset-sweep",
  /** Post the delay notice of each table past its promised cadence (every minute; lib/tables/freshness.ts). */
  tableFreshness: "table-freshness",
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** A delivery takes at most 15 s; a job active for longer than this was lost with its worker. */
const QUEUE_OPTIONS: Record<QueueName, PgBoss.Queue> = {
  [QUEUES.webhookDelivery]: { name: QUEUES.webhookDelivery, expireInSeconds: 30, retryLimit: 10, retryDelay: 5 },
  [QUEUES.webhookSweep]: { name: QUEUES.webhookSweep, expireInSeconds: 60, retryLimit: 0 },
  [QUEUES.keyLifecycle]: { name: QUEUES.keyLifecycle, expireInSeconds: 300, retryLimit: 3, retryDelay: 60 },
  // Reading a file of hundreds of GB takes long; a retry is for the store or the database being away.
  [QUEUES.datasetProfile]: {
    name: QUEUES.datasetProfile,
    expireInSeconds: 4 * 3600,
    retryLimit: 3,
    retryDelay: 60,
    retryBackoff: true,
  },
  [QUEUES.datasetRendition]: {
    name: QUEUES.datasetRendition,
    expireInSeconds: 4 * 3600,
    retryLimit: 3,
    retryDelay: 60,
    retryBackoff: true,
  },
  // A key check and a change file read a whole version (10 GB and more); retries are for the store or the database.
  [QUEUES.tablePublication]: {
    name: QUEUES.tablePublication,
    expireInSeconds: 4 * 3600,
    retryLimit: 3,
    retryDelay: 60,
    retryBackoff: true,
  },
  [QUEUES.tablePublicationSweep]: { name: QUEUES.tablePublicationSweep, expireInSeconds: 300, retryLimit: 0 },
  [QUEUES.failedPartsSweep]: { name: QUEUES.failedPartsSweep, expireInSeconds: 600, retryLimit: 0 },
  [QUEUES.mail]: { name: QUEUES.mail, expireInSeconds: 120, retryLimit: 5, retryDelay: 60, retryBackoff: true },
  // An export may copy hundreds of GB; its run's own lease (renewed while it copies) keeps a second
  // worker off it, and its own schedule retries it, so the job only retries a handler that threw.
  [QUEUES.exportRun]: {
    name: QUEUES.exportRun,
    expireInSeconds: 23 * 3600,
    retryLimit: 3,
    retryDelay: 60,
    retryBackoff: true,
  },
  [QUEUES.exportSweep]: { name: QUEUES.exportSweep, expireInSeconds: 60, retryLimit: 0 },
  // The engine's time is bounded (DATASET_SUBSET_SECONDS); the rest is the copy to the store. Retries are for the store or the database.
  [QUEUES.tableSubset]: { name: QUEUES.tableSubset, expireInSeconds: 3600, retryLimit: 2, retryDelay: 30 },
  [QUEUES.tableSubsetSweep]: { name: QUEUES.tableSubsetSweep, expireInSeconds: 600, retryLimit: 0 },
  [QUEUES.tableFreshness]: { name: QUEUES.tableFreshness, expireInSeconds: 60, retryLimit: 0 },
};

const START_ATTEMPTS = 5;
/** The advisory lock processes take in turn to start pg-boss (any number unused elsewhere; Prisma Migrate's differs). */
const QUEUE_START_LOCK = 0x6a6f6273; // "jobs"

async function startBoss(options: PgBoss.ConstructorOptions): Promise<PgBoss> {
  for (let attempt = 1; ; attempt++) {
    // On the app's own pool (lib/db/client.ts): its size, deadlines and failure handling, no second pool.
    const boss = new PgBoss({ db: { executeSql: poolQuery }, ...options });
    boss.on("error", (error) => logger().error({ ...errorFields(error) }, "job queue error"));
    try {
      // Processes starting together on a new database all install pg-boss's schema and queues, and
      // those statements deadlocked between them ("deadlock detected", issue #39): one at a time.
      await withAdvisoryLock(QUEUE_START_LOCK, async () => {
        await boss.start();
        const existing = new Set((await boss.getQueues()).map((queue: { name: string }) => queue.name));
        for (const queue of Object.values(QUEUE_OPTIONS)) {
          if (!existing.has(queue.name)) await boss.createQueue(queue.name, queue);
        }
      });
      return boss;
    } catch (error) {
      await boss.stop({ graceful: false, close: false }).catch(() => {});
      // A dropped connection or a database restarting: tried again, apart.
      if (attempt >= START_ATTEMPTS) throw error;
      logger().warn({ ...errorFields(error) }, "job queue: start failed, trying again");
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt + Math.random() * 250));
    }
  }
}

/** The process's queue for sending jobs (no maintenance, no cron: workers do that). */
export function jobQueue(): Promise<PgBoss> {
  return processSingleton("jobs:producer", () =>
    startBoss({ supervise: false, schedule: false }).catch((error: unknown) => {
      dropProcessSingleton("jobs:producer"); // the next send tries again
      throw error;
    }),
  );
}

/** Stops the process's sending queue, if it was started (the CLI before it exits). */
export async function closeJobQueue(): Promise<void> {
  const started = dropProcessSingleton<Promise<PgBoss>>("jobs:producer");
  if (started) await (await started).stop({ graceful: true, close: true });
}

/** pg-boss's SQL run inside a Prisma transaction, so a job commits (or not) with the change. */
function transactionDb(tx: Prisma.TransactionClient): PgBoss.Db {
  return {
    async executeSql(text, values) {
      const params = values.map((value) =>
        value === undefined ? null : typeof value === "object" && value !== null ? JSON.stringify(value) : value,
      );
      return { rows: await tx.$queryRawUnsafe<unknown[]>(text, ...params) };
    },
  };
}

/**
 * A transaction that may send jobs (sendJob with its `tx`), opened once the process's queue has
 * started: started inside it, the first send of a process (the CLI's, an instance's) waited for
 * pg-boss's start inside the transaction, which on a busy database outlasted Prisma's 5 s
 * transaction timeout (seen in CI).
 */
export async function jobTransaction<T>(work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  await jobQueue();
  return db().$transaction(work);
}

/** Sends a job, inside `tx` when given. */
export async function sendJob(
  queue: QueueName,
  data: object,
  options: { tx?: Prisma.TransactionClient; startAfter?: Date; singletonKey?: string } = {},
): Promise<void> {
  const { tx, ...jobOptions } = options;
  await (await jobQueue()).send(queue, data, { ...jobOptions, ...(tx ? { db: transactionDb(tx) } : {}) });
}

export type JobHandlers = Partial<Record<QueueName, (data: Record<string, unknown>) => Promise<void>>>;

/**
 * Starts a worker: runs `handlers` for their queues plus pg-boss's maintenance (expiring lost
 * jobs, retrying them) and `crons`. pg-boss fetches a batch per loop and waits out its polling
 * interval before the next fetch unless the fetch found jobs (then it fetches again at once), so deliveries run as 4 loops of batches handled side by side
 * (`concurrency` deliveries at once in all, fetched every 0.5 s: a slow receiver holds up only
 * its loop, and a batch ends within the 15 s delivery timeout, well inside the job's expiry); the
 * other queues run one loop of small batches, polled every 5 s; dataset jobs one at a time per loop,
 * polled every 0.5 s, with `profileConcurrency` loops of profiles and `subsetConcurrency` of subsets. A job whose handler throws is
 * failed alone (and retried by pg-boss); the rest of its batch completes. Returns its stop function.
 */
export async function startWorker({
  handlers,
  crons = {},
  concurrency = 100,
  exportConcurrency = 2,
  profileConcurrency = 1,
  subsetConcurrency = 1,
  maintenanceIntervalSeconds = 15,
}: {
  handlers: JobHandlers;
  crons?: Partial<Record<QueueName, string>>;
  concurrency?: number;
  /** Export runs at once (each its own loop of one job: a 100 GB export holds only its own loop). */
  exportConcurrency?: number;
  /** File profiles at once (a table's parts are profiled side by side; each runs in an engine process). */
  profileConcurrency?: number;
  /**
   * Subsets made at once. An account has one being made at a time (lib/explore/subset-job.ts), so
   * with two loops one account's whole-table subset holds one and the others' small ones go on.
   */
  subsetConcurrency?: number;
  maintenanceIntervalSeconds?: number;
}): Promise<() => Promise<void>> {
  const boss = await startBoss({ supervise: true, schedule: true, maintenanceIntervalSeconds });
  for (const [queue, handler] of Object.entries(handlers) as [QueueName, JobHandlers[QueueName]][]) {
    if (!handler) continue;
    const deliveries = queue === QUEUES.webhookDelivery;
    const exports = queue === QUEUES.exportRun;
    const loops = deliveries
      ? DELIVERY_LOOPS
      : exports
        ? Math.max(1, exportConcurrency)
        : queue === QUEUES.datasetProfile
          ? Math.max(1, profileConcurrency)
          : queue === QUEUES.tableSubset
            ? Math.max(1, subsetConcurrency)
            : 1;
    const options = {
      // Dataset jobs one at a time: each may read a file of any size, with DuckDB's memory bounded per process.
      batchSize: deliveries
        ? Math.max(1, Math.ceil(concurrency / DELIVERY_LOOPS))
        : DATASET_QUEUES.has(queue) || exports
          ? 1
          : 5,
      // A table version waits for dataset jobs in a row (profiles, then its publication): each poll's wait adds to it.
      pollingIntervalSeconds: deliveries || DATASET_QUEUES.has(queue) ? 0.5 : exports ? 2 : 5,
    };
    for (let i = 0; i < loops; i++) {
      let workerId = "";
      workerId = await boss.work<Record<string, unknown>>(queue, options, async (jobs) => {
        // A loop that found work fetches again at once: a backlog (1,000 parts) is not paced by the polling interval.
        if (jobs.length > 0) boss.notifyWorker(workerId);
        const results = await Promise.allSettled(jobs.map((job) => handler(job.data)));
        for (const [index, result] of results.entries()) {
          if (result.status === "rejected") {
            const reason = String((result.reason as Error)?.message ?? result.reason);
            // pg-boss retries it (or gives up after its retry limit); the operator sees every failure here.
            logger().error({ queue, jobId: jobs[index]!.id, ...errorFields(result.reason) }, `job failed: ${reason}`);
            await boss.fail(queue, jobs[index]!.id, { message: reason });
          }
        }
      });
    }
  }
  for (const [queue, cron] of Object.entries(crons)) if (cron) await boss.schedule(queue, cron);
  return () => boss.stop({ graceful: true, close: true, wait: true });
}

const DELIVERY_LOOPS = 4;
const DATASET_QUEUES = new Set<QueueName>([
  QUEUES.datasetProfile,
  QUEUES.datasetRendition,
  QUEUES.tablePublication,
  QUEUES.tableSubset,
]);
