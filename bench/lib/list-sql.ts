import { orderPageQuery } from "../../lib/orders/queries";

/**
 * The statement the app runs for `GET /api/v1/orders` (lib/orders/queries.ts), as text and
 * parameters for `pg`: the floor server and the EXPLAIN runs use exactly it.
 */
export function orderPageStatement(buyerId: string, limit: number, offset: number) {
  const query = orderPageQuery(buyerId, { limit, offset });
  return { text: query.text, values: query.values };
}
