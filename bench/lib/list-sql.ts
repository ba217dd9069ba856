/**
 * The SQL the app's Prisma client issues for listOrders() (lib/orders/queries.ts), copied from
 * Prisma 7's query log (log: ["query"]): the floor server and the EXPLAIN runs use exactly these.
 */

/** $1 buyer id, $2 limit + 1, $3 offset. */
export const ORDERS_SQL =
  `SELECT "public"."orders"."id", "public"."orders"."status"::text, "public"."orders"."name", ` +
  `"public"."orders"."paid_at", "public"."orders"."delivered_at" FROM "public"."orders" ` +
  `WHERE "public"."orders"."buyer_id" = $1 ORDER BY "public"."orders"."paid_at" DESC, "public"."orders"."id" DESC ` +
  `LIMIT $2 OFFSET $3`;

/** $1..$count the page's order ids (all limit + 1 of them, as Prisma sends), $count+1 the offset 0. */
export const filesSql = (count: number) =>
  `SELECT "public"."order_files"."id", "public"."order_files"."name", "public"."order_files"."size", ` +
  `"public"."order_files"."content_type", "public"."order_files"."sha256", "public"."order_files"."created_at", ` +
  `"public"."order_files"."order_id" FROM "public"."order_files" WHERE "public"."order_files"."order_id" IN (` +
  Array.from({ length: count }, (_, i) => `$${i + 1}`).join(",") +
  `) ORDER BY "public"."order_files"."created_at" ASC, "public"."order_files"."id" ASC OFFSET $${count + 1}`;
