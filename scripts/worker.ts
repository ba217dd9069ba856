import { privateTempRoot } from "../lib/engine/engine";
import { removeLeftWork } from "../lib/engine/left-work";
import { closeJobQueue } from "../lib/queue";
import { startJobWorker } from "../lib/jobs/registry";
import { errorFields, logger } from "../lib/log";
import { configuredOrigin } from "../lib/site";

/**
 * `npm run worker`: the job worker on its own, for installations that run it apart from the web
 * instances (then start those with JOBS_WORKER=off). Needs DATABASE_URL and the same AUTH_SECRET
 * as the app (it opens the webhook signing secrets). Stops on SIGINT/SIGTERM after the jobs in hand.
 */
if (!process.env.DATABASE_URL) {
  logger().fatal("DATABASE_URL is not set: the worker runs against the application's database.");
  process.exit(1);
}
// The data engine's temporary directory must be this user's own, or buyers' data could leak through it.
await privateTempRoot()
  .then(removeLeftWork)
  .catch((error: unknown) => {
    logger().fatal((error as Error).message);
    process.exit(1);
  });
// E-mailed links (key reminders) point where the launcher points them: APP_URL, else the local port.
process.env.NEXTAUTH_URL ??= configuredOrigin() || `http://localhost:${process.env.PORT ?? "3000"}`;
const stop = await startJobWorker().catch((error: unknown) => {
  logger().fatal({ ...errorFields(error) }, "the job worker did not start");
  process.exit(1);
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void Promise.allSettled([stop(), closeJobQueue()]).finally(() => process.exit(0));
  });
}
