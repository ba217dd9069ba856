import { deliverNoticeMail } from "../auth/mail";
import { runKeyLifecycle } from "../keys/lifecycle";
import { errorFields, logger } from "../log";
import { closeEnginePool, datasetEngineProcesses } from "../engine/engine-pool";
import { handleProfileJob, handleRenditionJob } from "../datasets/jobs";
import { continuePublicationOf, handlePublicationJob, sweepPublications } from "../tables/pipeline";
import { sweepFailedParts } from "../tables/failed-parts";
import { handleDeliveryJob, requeueStrandedMessages } from "../webhooks/deliver";
import { exportConcurrency } from "../exports/fairness";
import { handleExportJob, requeueStrandedRuns } from "../exports/runs";
import { handleSubsetJob, sweepSubsets } from "../explore/subset-job";
import { QUEUES, sendJob, startWorker } from "../queue";
import { announceLateTables } from "../tables/freshness";

/** Every few minutes by default; KEY_LIFECYCLE_CRON (a cron expression, UTC) overrides it. */
const DEFAULT_KEY_LIFECYCLE_CRON = "*/5 * * * *";
/** Subsets are kept 24 hours: an hourly sweep removes each within the hour after; SUBSET_SWEEP_CRON overrides it. */
const DEFAULT_SUBSET_SWEEP_CRON = "17 * * * *";

/**
 * The worker of this application's jobs: webhook deliveries (and a sweep for stranded ones each minute), the key lifecycle (on a cron, and
 * once at start), file profiles, table versions (and the hourly removal of failed publications' parts), table subsets (and their hourly sweep, once at start too), the lateness watch on tables' cadences (each minute), export runs (and their sweep) and notice e-mails. Run inside the app's process unless JOBS_WORKER=off, or on
 * its own with `npm run worker`; any number may run against one database.
 */
export async function startJobWorker(): Promise<() => Promise<void>> {
  const stop = await startWorker({
    handlers: {
      [QUEUES.webhookDelivery]: handleDeliveryJob,
      [QUEUES.webhookSweep]: async () => {
        await requeueStrandedMessages();
      },
      [QUEUES.keyLifecycle]: async () => {
        await runKeyLifecycle();
      },
      // A part's profile or Parquet rendition done: its publication may go on (lib/tables/pipeline.ts).
      [QUEUES.datasetProfile]: async (data) => {
        await handleProfileJob(data);
        if (typeof data.fileId === "string") await continuePublicationOf(data.fileId);
      },
      [QUEUES.datasetRendition]: async (data) => {
        await handleRenditionJob(data);
        if (typeof data.fileId === "string" && data.format === "parquet") await continuePublicationOf(data.fileId);
      },
      [QUEUES.tablePublication]: handlePublicationJob,
      [QUEUES.tablePublicationSweep]: async () => {
        await sweepPublications();
      },
      [QUEUES.failedPartsSweep]: async () => {
        await sweepFailedParts();
      },
      [QUEUES.exportRun]: handleExportJob,
      [QUEUES.exportSweep]: async () => {
        await requeueStrandedRuns();
      },
      [QUEUES.tableFreshness]: async () => {
        await announceLateTables();
      },
      [QUEUES.tableSubset]: handleSubsetJob,
      [QUEUES.tableSubsetSweep]: async () => {
        await sweepSubsets();
      },
      [QUEUES.mail]: async (data) => {
        const { to, subject, text } = data as { to: string; subject: string; text: string };
        await deliverNoticeMail({ to, subject, text });
      },
    },
    crons: {
      [QUEUES.keyLifecycle]: process.env.KEY_LIFECYCLE_CRON || DEFAULT_KEY_LIFECYCLE_CRON,
      [QUEUES.webhookSweep]: "* * * * *",
      [QUEUES.tablePublicationSweep]: "*/5 * * * *",
      // Kept 7 days from the decision: removed within the hour after.
      [QUEUES.failedPartsSweep]: "41 * * * *",
      [QUEUES.exportSweep]: "* * * * *",
      [QUEUES.tableSubsetSweep]: process.env.SUBSET_SWEEP_CRON || DEFAULT_SUBSET_SWEEP_CRON,
      // Lateness is looked for every minute (contract Part 9).
      [QUEUES.tableFreshness]: "* * * * *",
    },
    concurrency: Math.max(1, Number(process.env.JOBS_CONCURRENCY) || 100),
    // Exports apart from the other jobs: a 100 GB copy holds one of these, never a webhook delivery.
    exportConcurrency: exportConcurrency(),
    // As many profiles at once as there are engine processes to run them.
    profileConcurrency: datasetEngineProcesses(),
    // The same for subsets: one account's large subset then holds one process, never all of them.
    subsetConcurrency: datasetEngineProcesses(),
  });
  await sendJob(QUEUES.keyLifecycle, {}).catch((error: unknown) =>
    logger().warn({ ...errorFields(error) }, "key lifecycle: first run not queued"),
  );
  // Publications left in processing (a migration, a lost job) go on at once, not at the next sweep.
  await sendJob(QUEUES.tablePublicationSweep, {}).catch((error: unknown) =>
    logger().warn({ ...errorFields(error) }, "publication sweep: first run not queued"),
  );
  // Subsets past their time while no worker ran go now, not at the next sweep.
  await sendJob(QUEUES.tableSubsetSweep, {}).catch((error: unknown) =>
    logger().warn({ ...errorFields(error) }, "subset sweep: first run not queued"),
  );
  logger().info(
    "Job worker started (webhooks, key lifecycle, file profiles, table versions, freshness, subsets, exports, e-mail).",
  );
  // Jobs in hand finish first; then the engine processes they used go.
  return () => stop().finally(closeEnginePool);
}
