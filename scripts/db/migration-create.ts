import { execFileSync } from "node:child_process";
import { promises as fs } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { openEmbeddedDatabase } from "../../lib/db/embedded";
import { MIGRATIONS_DIR } from "../../lib/db/migrate";
import { runMain } from "../run-main";
import { diffSchemas } from "./schema-engine";

/**
 * `npm run db:migration -- --name <what_changed> [--from <git ref>]` writes the next migration:
 * the SQL Prisma's schema engine computes between schema.prisma at the git ref (default HEAD,
 * i.e. the last committed schema, which the existing migrations produce) and the working copy.
 * The schema-drift test then proves the migrations and schema.prisma agree.
 */
const { values } = parseArgs({ options: { name: { type: "string" }, from: { type: "string", default: "HEAD" } } });
await runMain(async () => {
  if (!values.name || !/^[a-z0-9_]+$/.test(values.name)) {
    console.error("Usage: npm run db:migration -- --name <snake_case_description> [--from <git ref>]");
    return 1;
  }

  const schemaPath = "prisma/schema.prisma";
  const fromSchema = execFileSync("git", ["show", `${values.from}:${schemaPath}`], { encoding: "utf8" });
  const embedded = process.env.DATABASE_URL ? null : await openEmbeddedDatabase();
  const sql = await diffSchemas(
    fromSchema,
    await fs.readFile(schemaPath, "utf8"),
    process.env.DATABASE_URL ?? embedded!.url,
  ).finally(() => embedded?.stop());
  if (!sql) {
    console.log(`schema.prisma is unchanged since ${values.from}: no migration needed.`);
  } else {
    const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
    const dir = path.join(MIGRATIONS_DIR, `${stamp}_${values.name}`);
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, "migration.sql"), sql);
    console.log(`Wrote ${path.relative(process.cwd(), dir)}/migration.sql; review it before committing.`);
  }
});
