import { promises as fs } from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";

/**
 * The migration that removes the decimal bounds published through a double before they were exact
 * (issue #37): a DECIMAL of more than 15 digits loses its minValues and maxValues, everything else
 * of the statistics stays.
 */

const MIGRATION = path.resolve("prisma/migrations/20261127120000_exact_decimal_stats/migration.sql");
let env: TestEnvironment;

beforeAll(async () => {
  env = await createTestEnvironment("exact-decimal-stats");
});

afterAll(async () => {
  await env?.cleanup();
});

async function renditionWith(columns: { name: string; type: string }[] | null, stats: object): Promise<string> {
  const account = await buyer("decimal-stats");
  const created = await order(account.id, { files: { "part.parquet": Buffer.from("PAR1") } });
  const fileId = created.files[0]!.id;
  await db().orderFile.update({ where: { id: fileId }, data: { columns: columns ?? undefined } });
  await db().fileRendition.upsert({
    where: { fileId_format: { fileId, format: "parquet" } },
    create: { fileId, format: "parquet", status: "ready", stats },
    update: { status: "ready", stats },
  });
  return fileId;
}

const statsOf = async (fileId: string) =>
  (await db().fileRendition.findUniqueOrThrow({ where: { fileId_format: { fileId, format: "parquet" } } })).stats;

describe("the exact decimal statistics migration", () => {
  it("removes the bounds of decimals wider than 15 digits and keeps everything else", async () => {
    const stats = {
      minValues: { wide: 1, wider: -5, narrow: 1.5, n: 1, name: "a" },
      maxValues: { wide: 1, wider: 5, narrow: 9.25, n: 5, name: "z" },
      nullCount: { wide: 0, wider: 1, narrow: 0, n: 0, name: 0 },
    };
    const mixed = await renditionWith(
      [
        { name: "wide", type: "DECIMAL(38,20)" },
        { name: "wider", type: "DECIMAL(16, 0)" },
        { name: "narrow", type: "DECIMAL(15,2)" },
        { name: "n", type: "BIGINT" },
        { name: "name", type: "VARCHAR" },
      ],
      stats,
    );
    const untouched = await renditionWith([{ name: "narrow", type: "DECIMAL(10,2)" }], stats);
    const unprofiled = await renditionWith(null, stats);

    const client = new pg.Client({ connectionString: env.database.url });
    await client.connect();
    try {
      await client.query(await fs.readFile(MIGRATION, "utf8"));
    } finally {
      await client.end();
    }

    expect(await statsOf(mixed)).toEqual({
      minValues: { narrow: 1.5, n: 1, name: "a" },
      maxValues: { narrow: 9.25, n: 5, name: "z" },
      nullCount: stats.nullCount,
    });
    expect(await statsOf(untouched)).toEqual(stats);
    expect(await statsOf(unprofiled)).toEqual(stats);
  });
});
