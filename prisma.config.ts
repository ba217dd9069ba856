import { defineConfig } from "prisma/config";

// The Prisma CLI is used here for `prisma generate` only; migrations are applied by
// `npm run db:migrate` (lib/db/migrate.ts), which needs no schema-engine binary.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://localhost/unused" },
});
