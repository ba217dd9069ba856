import { readOnlyApiRoute } from "@/lib/api/node";
import { apiJson, withApiKey } from "@/lib/api/with-api-key";
import { orderJson } from "@/lib/orders/queries";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

export default readOnlyApiRoute(
  withApiKey<{ id: string }>(async ({ key, params }) => apiJson(await orderJson(key.buyerId, params.id)), {
    permission: "datasets:read",
  }),
);
