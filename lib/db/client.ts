import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/client";

export { Prisma } from "./generated/client";
export type * from "./generated/client";

const globalForPrisma = globalThis as unknown as { prisma?: PrismaClient };

/** The app's one Prisma client, created on first use (so `next build` never needs a database). */
export function db(): PrismaClient {
  globalForPrisma.prisma ??= new PrismaClient({
    adapter: new PrismaPg({ connectionString: databaseUrl(), max: Number(process.env.DATABASE_POOL_SIZE ?? 10) }),
  });
  return globalForPrisma.prisma;
}

export async function disconnectDb(): Promise<void> {
  await globalForPrisma.prisma?.$disconnect();
  globalForPrisma.prisma = undefined;
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
