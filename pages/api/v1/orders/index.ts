import { readOnlyApiRoute } from "@/lib/api/node";
import { parseQuery } from "@/lib/api/validation";
import { apiJson, withApiKey } from "@/lib/api/with-api-key";
import { orderPageJson } from "@/lib/orders/queries";
import { listOrdersQuerySchema } from "@/lib/schemas/api";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

export default readOnlyApiRoute(
  withApiKey(
    async ({ request, key }) => apiJson(await orderPageJson(key.buyerId, parseQuery(listOrdersQuerySchema, request))),
    { permission: "datasets:read" },
  ),
);
