import { randomBytes } from "node:crypto";
import { appendFileSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildProductionServer, createDatabase, openTestDatabaseServer } from "../tests/helpers/database-server";
import { prepareTestEnvironment } from "../tests/helpers/fixtures";
import { copyServerOutputTo, startServer } from "../tests/helpers/server";
import { startTestS3 } from "../tests/helpers/s3";
import { startSmtpServer } from "../tests/helpers/smtp";
import { E2E_SERVER_LOG } from "./server-log";

/**
 * Before the end-to-end tests: a real SMTP server on loopback that writes every message it
 * receives to E2E_MAIL_DIR, a migrated database, and the production server (`npm start`) sending
 * its sign-in e-mails to that SMTP server. Tests read the URL, database and mail directory from
 * the environment this sets.
 */
export default async function globalSetup() {
  buildProductionServer();
  const databaseServer = await openTestDatabaseServer();
  // STORAGE_DRIVER=s3: the files go to an S3-compatible store (the given S3_*, else the tests' own).
  const s3 = process.env.STORAGE_DRIVER === "s3" && !process.env.S3_ENDPOINT ? await startTestS3() : undefined;
  if (s3) Object.assign(process.env, s3.env);
  const environment = await prepareTestEnvironment(
    await createDatabase(databaseServer.url, "e2e", { migrated: true }),
    "e2e",
  );
  const mailDir = await fs.mkdtemp(path.join(os.tmpdir(), "e2e-mail-"));
  let received = 0;
  const smtp = await startSmtpServer({
    // Written aside and renamed into place, so a test polling the directory never reads half a message.
    onMessage: async (mail) => {
      const file = path.join(mailDir, `${Date.now()}-${++received}.json`);
      await fs.writeFile(`${file}.partial`, JSON.stringify(mail));
      await fs.rename(`${file}.partial`, file);
    },
  });

  // The server's whole log, kept after the run; a failing test prints the part written while it ran (./helpers.ts).
  await fs.mkdir(path.dirname(E2E_SERVER_LOG), { recursive: true });
  await fs.writeFile(E2E_SERVER_LOG, "");
  copyServerOutputTo((chunk) => appendFileSync(E2E_SERVER_LOG, chunk));
  const server = await startServer({
    databaseUrl: environment.database.url,
    storageDir: environment.storageDir,
    withAppUrl: true,
    env: {
      // In-process rate limits: every run signs in a dozen times from 127.0.0.1, and a shared
      // Redis would carry those counts into the next run.
      REDIS_URL: "",
      // The suite signs in about 40 times from 127.0.0.1 within 15 minutes (the default network share is 30).
      SIGNIN_LIMIT_PER_IP: "200",
      EMAIL_SERVER: smtp.url,
      EMAIL_FROM: "Dataset Access <sign-in@dataset-access.test>",
      // The tests' webhook receivers are plain HTTP on loopback.
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_ALLOW_INSECURE: "true",
      // Expiry reminders are checked every minute, not every five.
      KEY_LIFECYCLE_CRON: "* * * * *",
      // The export tests' stores are on loopback; production needs a key ring for destination secrets.
      EXPORT_ALLOW_PRIVATE: "true",
      EXPORT_SECRETS_KEY: randomBytes(32).toString("base64"),
    },
  });
  process.env.E2E_BASE_URL = server.url;
  process.env.E2E_MAIL_DIR = mailDir;
  process.env.E2E_SMTP_URL = smtp.url;

  return async () => {
    await server.stop();
    await smtp.close();
    await environment.cleanup();
    await databaseServer.stop();
    await s3?.stop();
    await fs.rm(mailDir, { recursive: true, force: true });
  };
}
