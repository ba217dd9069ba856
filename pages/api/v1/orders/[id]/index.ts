import { apiJson } from "@/lib/api/responses";
import { apiRoute } from "@/lib/api/route";
import { orderJson } from "@/lib/orders/queries";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

export default apiRoute<{ id: string }>(
  { permission: "datasets:read", keyInFirstRead: true },
  async ({ key, params, sql }) => apiJson(await orderJson(key.buyerId, params.id, sql)),
);
