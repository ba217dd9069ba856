import { deliverNoticeMail } from "../auth/mail";
import { runKeyLifecycle } from "../keys/lifecycle";
import { errorFields, logger } from "../log";
import { handleProfileJob, handleRenditionJob } from "../datasets/jobs";
import { handleDeliveryJob, requeueStrandedMessages } from "../webhooks/deliver";
import { QUEUES, sendJob, startWorker } from "./index";

/** Every few minutes by default; KEY_LIFECYCLE_CRON (a cron expression, UTC) overrides it. */
const DEFAULT_KEY_LIFECYCLE_CRON = "*/5 * * * *";

/**
 * The worker of this application's jobs: webhook deliveries (and a sweep for stranded ones each minute), the key lifecycle (on a cron, and
 * once at start) and notice e-mails. Run inside the app's process unless JOBS_WORKER=off, or on
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
      [QUEUES.datasetProfile]: handleProfileJob,
      [QUEUES.datasetRendition]: handleRenditionJob,
      [QUEUES.mail]: async (data) => {
        const { to, subject, text } = data as { to: string; subject: string; text: string };
        await deliverNoticeMail({ to, subject, text });
      },
    },
    crons: {
      [QUEUES.keyLifecycle]: process.env.KEY_LIFECYCLE_CRON || DEFAULT_KEY_LIFECYCLE_CRON,
      [QUEUES.webhookSweep]: "* * * * *",
    },
    concurrency: Math.max(1, Number(process.env.JOBS_CONCURRENCY) || 100),
  });
  await sendJob(QUEUES.keyLifecycle, {}).catch((error: unknown) =>
    logger().warn({ ...errorFields(error) }, "key lifecycle: first run not queued"),
  );
  logger().info("Job worker started (webhooks, key lifecycle, file profiles, e-mail).");
  return stop;
}
