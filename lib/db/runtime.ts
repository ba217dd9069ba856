import { openEmbeddedDatabase } from "./embedded";
import { migrate } from "./migrate";

export type PreparedDatabase = { url: string; embeddedCreated: boolean; stop: () => Promise<void> };

/**
 * Makes DATABASE_URL usable for this process: with it unset, opens (and if need be creates)
 * the embedded PostgreSQL, points DATABASE_URL at it and applies migrations. With it set,
 * migrations are applied only when asked (`migrateConfigured`), as `npm start` does.
 */
export async function prepareDatabase(
  options: { migrateConfigured?: boolean; log?: (message: string) => void } = {},
): Promise<PreparedDatabase> {
  const log = options.log ?? (() => {});
  const configured = process.env.DATABASE_URL;
  if (configured) {
    if (options.migrateConfigured) await migrate(configured, { log });
    return { url: configured, embeddedCreated: false, stop: async () => {} };
  }
  const embedded = await openEmbeddedDatabase(undefined, log);
  process.env.DATABASE_URL = embedded.url;
  try {
    await migrate(embedded.url, { log });
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return { url: embedded.url, embeddedCreated: embedded.created, stop: embedded.stop };
}
