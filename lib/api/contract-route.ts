import { tablePathSchema } from "../schemas/api";
import { dataContractSchema } from "../schemas/contract";
import { publicOrigin } from "../site";
import { tableContract } from "../tables/contract";
import { textResponse } from "../http/text-response";
import { route } from "./route-spec";

/**
 * `GET /orders/{id}/tables/{name}/contract` (docs/tables.md, "What a table promises"): the table's ODCS data contract, YAML
 * unless the request's Accept names JSON first, with an ETag per body and 304 on If-None-Match.
 */
export const contractRoute = route({
  operationId: "getTableContract",
  path: "/orders/{id}/tables/{name}/contract",
  permission: "datasets:read",
  keyInFirstRead: true,
  summary: "Read a table's data contract (ODCS v3.1.0)",
  description:
    "The table's Open Data Contract Standard document, made from what the table is now: its current version's " +
    "columns (types, nullability, the key), the data dictionary, the quality checks every version must pass and " +
    "the promised cadence. YAML (`application/yaml`) by default; `Accept: application/json` for JSON. The ETag " +
    "changes with the content; `If-None-Match` answers 304.",
  params: tablePathSchema,
  answer: {
    json: dataContractSchema,
    yaml: true,
    description: "The data contract.",
    headers: { ETag: "Changes with the content (and between YAML and JSON)." },
  },
  errors: ["order_not_found", "table_not_found"],
  handler: async ({ key, params, request, sql }) => {
    const json = wantsJson(request.headers.get("accept"));
    const contract = await tableContract(
      key.buyerId,
      params.id,
      params.name,
      { json, origin: publicOrigin(request), supportEmail: process.env.SUPPORT_EMAIL || undefined },
      sql,
    );
    const headers = {
      "Content-Type": contract.contentType,
      "Cache-Control": "private, no-cache",
      ETag: contract.etag,
      Vary: "Accept",
    };
    if (matches(request.headers.get("if-none-match"), contract.etag))
      return new Response(null, { status: 304, headers });
    return textResponse(contract.body, { headers });
  },
});

/** JSON when the Accept header prefers it to YAML (the default, also for `*\/*` or no header). */
function wantsJson(accept: string | null): boolean {
  if (!accept) return false;
  const ranked = accept
    .split(",")
    .map((part) => {
      const [type = "", ...parameters] = part.trim().toLowerCase().split(";");
      const q = parameters.map((p) => p.trim()).find((p) => p.startsWith("q="));
      return { type: type.trim(), q: q ? Number(q.slice(2)) : 1 };
    })
    .filter((entry) => entry.q > 0);
  const rank = (types: string[]) =>
    Math.max(-1, ...ranked.filter((entry) => types.includes(entry.type)).map((entry) => entry.q));
  return rank(["application/json"]) > rank(["application/yaml", "application/x-yaml", "text/yaml"]);
}

function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}
