import { apiJson } from "@/lib/api/responses";
import { apiRoute } from "@/lib/api/route";
import { parseQuery } from "@/lib/api/validation";
import { orderPageJson } from "@/lib/orders/queries";
import { listOrdersQuerySchema } from "@/lib/schemas/api";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

export default apiRoute({ permission: "datasets:read", keyInFirstRead: true }, async ({ request, key, sql }) =>
  apiJson(await orderPageJson(key.buyerId, parseQuery(listOrdersQuerySchema, request), sql)),
);
