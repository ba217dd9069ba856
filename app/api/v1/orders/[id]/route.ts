import { apiJson, methodNotAllowed, withApiKey } from "@/lib/api/with-api-key";
import { orderJson } from "@/lib/orders/queries";

export const dynamic = "force-dynamic";

export const GET = withApiKey<{ id: string }>(
  async ({ key, params }) => apiJson(await orderJson(key.buyerId, params.id)),
  { permission: "datasets:read" },
);
export const HEAD = GET;
export { methodNotAllowed as POST, methodNotAllowed as PUT, methodNotAllowed as PATCH, methodNotAllowed as DELETE };
