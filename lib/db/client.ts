import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/client";

export { Prisma } from "./generated/client";
export type * from "./generated/client";

const globalForPrisma = globalThis as unknown as { prisma?: PrismaClient; pool?: pg.Pool };

/** The app's one connection pool, shared by Prisma and the hot-path statements (see `sql`). */
function pool(): pg.Pool {
  globalForPrisma.pool ??= new pg.Pool({
    connectionString: databaseUrl(),
    max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  });
  return globalForPrisma.pool;
}

/** The app's one Prisma client, created on first use (so `next build` never needs a database). */
export function db(): PrismaClient {
  globalForPrisma.prisma ??= new PrismaClient({ adapter: new PrismaPg(pool()) });
  return globalForPrisma.prisma;
}

/**
 * A prepared statement run on the same pool without Prisma's query machinery: only for the
 * statements every API request runs (key lookup, order page), where that machinery was a
 * measurable share of the CPU per request (bench/api-list.ts). `name` makes PostgreSQL keep the
 * plan per connection.
 */
export async function preparedQuery<Row extends pg.QueryResultRow>(
  name: string,
  text: string,
  values: unknown[],
): Promise<Row[]> {
  return (await pool().query<Row>({ name, text, values })).rows;
}

export async function disconnectDb(): Promise<void> {
  await globalForPrisma.prisma?.$disconnect();
  await globalForPrisma.pool?.end();
  globalForPrisma.prisma = undefined;
  globalForPrisma.pool = undefined;
}

/** The URL the app connects to. The launcher sets it for the embedded default. */
function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error(
      "DATABASE_URL is not set. Start the app with `npm run dev` or `npm start`, which provide an embedded PostgreSQL, or set DATABASE_URL.",
    );
  }
  return url;
}
