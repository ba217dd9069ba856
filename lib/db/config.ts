import path from "node:path";

/** Where the app keeps local state (embedded PostgreSQL, stored files) unless configured otherwise. */
// turbopackIgnore: these are runtime paths, not files for the bundler to trace.
export const DATA_DIR = path.resolve(/* turbopackIgnore: true */ process.cwd(), process.env.DATA_DIR ?? ".data");

export type EmbeddedDatabaseSettings = {
  dataDir: string;
  port: number;
  database: string;
  user: string;
  password: string;
};

export function embeddedDatabaseSettings(): EmbeddedDatabaseSettings {
  return {
    dataDir: path.resolve(/* turbopackIgnore: true */ process.env.EMBEDDED_PG_DIR ?? path.join(DATA_DIR, "postgres")),
    port: Number(process.env.EMBEDDED_PG_PORT ?? 54329),
    database: "dataset_access",
    user: "postgres",
    password: "postgres",
  };
}

export function embeddedDatabaseUrl(settings: EmbeddedDatabaseSettings, database = settings.database): string {
  const { user, password, port } = settings;
  return `postgresql://${user}:${password}@127.0.0.1:${port}/${database}`;
}
