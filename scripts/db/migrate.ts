import { prepareDatabase } from "../../lib/db/runtime";
import { runMain } from "../run-main";

/** `npm run db:migrate`: applies pending migrations to DATABASE_URL (or to the embedded database). */
await runMain(async () => {
  const database = await prepareDatabase({ migrateConfigured: true, log: console.log });
  console.log("The database is up to date.");
  await database.stop();
});
