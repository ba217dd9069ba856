import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";

/** Where the app keeps local state (embedded PostgreSQL, stored files) unless configured otherwise. */
// turbopackIgnore: these are runtime paths, not files for the bundler to trace.
export const DATA_DIR = path.resolve(/* turbopackIgnore: true */ process.cwd(), process.env.DATA_DIR ?? ".data");

/**
 * Creates `dir` (DATA_DIR by default), or tightens an existing one, so that only the app's user
 * can read it: 0700. As root 0711 (others may pass through, not list it): the embedded
 * PostgreSQL runs as the user postgres and must reach its cluster inside, and everything the app
 * writes there is 0600/0700 itself.
 */
export async function ensureDataDir(dir = DATA_DIR): Promise<void> {
  const mode = os.userInfo().uid === 0 ? 0o711 : 0o700;
  await fs.mkdir(dir, { recursive: true, mode });
  await fs.chmod(dir, mode).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EPERM") throw error; // another user's directory: not ours to change
  });
}

export type EmbeddedDatabaseSettings = {
  dataDir: string;
  port: number;
  database: string;
  user: string;
};

export function embeddedDatabaseSettings(): EmbeddedDatabaseSettings {
  return {
    dataDir: path.resolve(/* turbopackIgnore: true */ process.env.EMBEDDED_PG_DIR ?? path.join(DATA_DIR, "postgres")),
    port: Number(process.env.EMBEDDED_PG_PORT ?? 54329),
    database: "dataset_access",
    user: "postgres",
  };
}

/** The embedded cluster's generated password lives beside its data directory: `.data/postgres-password` by default. */
export function embeddedPasswordFile(dataDir: string): string {
  return `${dataDir}-password`;
}

export function embeddedDatabaseUrl(
  settings: EmbeddedDatabaseSettings,
  password: string,
  database = settings.database,
): string {
  const { user, port } = settings;
  return `postgresql://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}
