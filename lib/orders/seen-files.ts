import { Prisma } from "../db/client";

/**
 * Which files of an order its buyer may see (contract Part 8, "Unseen until released"): a file of
 * no table (a binary file, a change file), or a part of a publication that became a version. A
 * part of a publication still processing or held, or failed or rejected, is no file of the order
 * for the buyer: not listed, not downloadable or previewable by id (file_not_found), no rendition,
 * no share page, sync, export, Delta Sharing answer or MCP tool. The quality gate holds only if
 * every door asks this, so each does, through one of the two forms below (the same rule written
 * for raw SQL and for Prisma; tests/orders/seen-files.test.ts holds them to each other).
 */

/** The rule for the file row `f` in raw SQL (a condition, self-contained: it joins nothing). */
export const SEEN_FILE = Prisma.sql`(f.publication_id IS NULL OR EXISTS (
  SELECT 1 FROM table_publications seen WHERE seen.id = f.publication_id AND seen.status = 'ready'))`;

/** The same rule as a Prisma filter on order files. */
export const SEEN_FILE_WHERE = {
  OR: [{ publicationId: null }, { publication: { status: "ready" } }],
} satisfies Prisma.OrderFileWhereInput;
