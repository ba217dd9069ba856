import { promises as fs } from "node:fs";
import path from "node:path";
import { db } from "../../lib/db/client";
import { CHECK_NAMES } from "../../lib/schemas/quality";
import { tableChecks } from "../../lib/tables/quality-admin";
import { waitFor } from "../helpers/wait";

/** Rows of products as CSV text: `id,name,price` plus any extra columns, one line per row. */
export function productsCsv(
  rows: { id: number | string | null; name: string; price: number | null; [extra: string]: unknown }[],
): string {
  const columns = Object.keys(rows[0] ?? { id: 0, name: "", price: 0 });
  const cell = (value: unknown) =>
    value === null || value === undefined
      ? ""
      : /[",\n]/.test(String(value))
        ? `"${String(value).replaceAll('"', '""')}"`
        : String(value);
  return `${columns.join(",")}\n${rows.map((row) => columns.map((column) => cell(row[column])).join(",")).join("\n")}\n`;
}

/** `count` products with ids from `from`, prices `id * 1.5` (`price` to vary them). */
export function products(from: number, count: number, price = (id: number) => id * 1.5) {
  return Array.from({ length: count }, (_, i) => ({
    id: from + i,
    name: `Product ${from + i}`,
    price: price(from + i),
  }));
}

/** Writes `content` to `name` in `dir` and returns its path. */
export async function partFile(dir: string, name: string, content: string): Promise<string> {
  const file = path.join(dir, name);
  await fs.writeFile(file, content);
  return file;
}

/** Waits until the publication is ready, held by its quality checks, or failed (lib/tables/pipeline.ts). */
export async function publicationDone(publicationId: string, withinMs = 120_000) {
  let status = "";
  await waitFor(
    async () => {
      status = (
        await db().tablePublication.findUniqueOrThrow({ where: { id: publicationId }, select: { status: true } })
      ).status;
      return status === "ready" || status === "held" || status === "failed";
    },
    withinMs,
    `publication ${publicationId} to be made a version, held or failed`,
  );
  return db().tablePublication.findUniqueOrThrow({
    where: { id: publicationId },
    select: { status: true, error: true, version: true, seq: true },
  });
}

/**
 * Turns every quality check of a table off (Part 6): for tests of change files and versions whose
 * small generated versions change on purpose more than the gate lets through (its own tests are
 * tests/tables/quality.test.ts).
 */
export async function withoutQualityChecks(orderId: string, table: string): Promise<void> {
  await tableChecks(
    orderId,
    table,
    CHECK_NAMES.map((name) => `${name}=0:off`),
  );
}
