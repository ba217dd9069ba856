import { disconnectDb } from "../lib/db/client";
import { prepareDatabase } from "../lib/db/runtime";
import { runMain } from "./run-main";
import { seedDemo } from "./seed-demo";

/** `npm run seed`: loads the demo data into DATABASE_URL (or the embedded database). */
await runMain(async () => {
  const database = await prepareDatabase({ migrateConfigured: true });
  try {
    await seedDemo();
  } finally {
    await disconnectDb();
    await database.stop();
  }
});
