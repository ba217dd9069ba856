import path from "node:path";

/** Where the app keeps local state (embedded PostgreSQL, stored files) unless configured otherwise. */
export const DATA_DIR = path.resolve(process.env.DATA_DIR ?? ".data");

export type EmbeddedDatabaseSettings = {
  dataDir: string;
  port: number;
  database: string;
  user: string;
  password: string;
};

export function embeddedDatabaseSettings(): EmbeddedDatabaseSettings {
  return {
    dataDir: path.resolve(process.env.EMBEDDED_PG_DIR ?? path.join(DATA_DIR, "postgres")),
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

/** The URL the app's Prisma client connects to. The launcher sets it for the embedded default. */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error(
      "DATABASE_URL is not set. Start the app with `npm run dev` or `npm start`, which provide an embedded PostgreSQL, or set DATABASE_URL.",
    );
  }
  return url;
}
