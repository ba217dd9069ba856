import { apiJson, methodNotAllowed, withApiKey } from "@/lib/api/with-api-key";
import { parseQuery } from "@/lib/api/validation";
import { orderPageJson } from "@/lib/orders/queries";
import { listOrdersQuerySchema } from "@/lib/schemas/api";

export const dynamic = "force-dynamic";

export const GET = withApiKey(
  async ({ request, key }) => apiJson(await orderPageJson(key.buyerId, parseQuery(listOrdersQuerySchema, request))),
  { permission: "datasets:read" },
);
export const HEAD = GET;
export { methodNotAllowed as POST, methodNotAllowed as PUT, methodNotAllowed as PATCH, methodNotAllowed as DELETE };
