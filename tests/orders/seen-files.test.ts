import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db, sqlQuery } from "../../lib/db/client";
import { SEEN_FILE, SEEN_FILE_WHERE } from "../../lib/orders/seen-files";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";

/**
 * The rule of which files a buyer sees (contract Part 8), in both its forms: the raw SQL condition
 * and the Prisma filter choose the same files of an order, over a file of no table, a change file
 * and a part of a publication in every status.
 */

let env: TestEnvironment;
let orderId: string;
const expected = new Map<string, boolean>();

beforeAll(async () => {
  env = await createTestEnvironment("seen_files");
  orderId = (await order((await buyer("seen-files")).id)).id;
  const table = await db().orderTable.create({ data: { orderId, name: "products" }, select: { id: true } });
  const file = async (name: string, data: { publicationId?: string; origin?: "change_feed" }, seen: boolean) => {
    const row = await db().orderFile.create({
      data: { orderId, name, size: 1n, contentType: "text/csv", sha256: "0".repeat(64), storageKey: name, ...data },
      select: { id: true },
    });
    expected.set(row.id, seen);
  };
  await file("readme.txt", {}, true);
  await file("products.v1.changes.parquet", { origin: "change_feed" }, true);
  const statuses = ["uploading", "processing", "held", "ready", "failed"] as const;
  for (const [seq, status] of statuses.entries()) {
    const publication = await db().tablePublication.create({
      data: { tableId: table.id, status, seq: seq + 1, version: status === "ready" ? 1 : null },
      select: { id: true },
    });
    await file(`${status}.csv`, { publicationId: publication.id }, status === "ready");
  }
}, 120_000);

afterAll(async () => {
  await env?.cleanup();
});

describe("the files a buyer sees", () => {
  it("are the same in SQL and in Prisma: files of no table, and parts of versions only", async () => {
    const bySql = await sqlQuery<{ id: string }>(
      `SELECT f.id FROM order_files f WHERE f.order_id = $1 AND ${SEEN_FILE.text} ORDER BY f.id`,
      [orderId],
    );
    const byPrisma = await db().orderFile.findMany({
      where: { orderId, ...SEEN_FILE_WHERE },
      orderBy: { id: "asc" },
      select: { id: true },
    });
    const seen = [...expected].filter(([, isSeen]) => isSeen).map(([id]) => id);
    expect(bySql.map((row) => row.id)).toEqual(seen.sort());
    expect(byPrisma.map((row) => row.id)).toEqual(seen.sort());
  });
});
