import { AppError } from "../errors";
import { publicOrigin } from "../site";
import { tableContract } from "../tables/contract";
import { plainNotFound } from "./responses";

/**
 * A table's data contract downloaded from the dashboard: the API's document (YAML, or JSON with
 * `?format=json`) of one of the buyer's tables, as an attachment named `<table>.odcs.yaml`. Another
 * buyer's order, an unknown table or a malformed id is the same plain 404 as every dashboard download.
 */
export async function browserContract(
  request: Request,
  target: { buyerId: string; orderId: string; table: string },
): Promise<Response> {
  const asked = new URL(request.url).searchParams.get("format") ?? "yaml";
  if (asked !== "yaml" && asked !== "json") return plainNotFound("No such format here: ask for yaml or json.");
  try {
    const contract = await tableContract(target.buyerId, target.orderId, target.table, {
      json: asked === "json",
      origin: publicOrigin(request),
      supportEmail: process.env.SUPPORT_EMAIL || undefined,
    });
    return new Response(contract.body, {
      headers: {
        "Content-Type": contract.contentType,
        // The name passed tableContract's check (lower-case letters, digits and _), so it needs no quoting.
        "Content-Disposition": `attachment; filename="${target.table}.odcs.${asked}"`,
        "Cache-Control": "private, no-store",
        ETag: contract.etag,
      },
    });
  } catch (error) {
    if (error instanceof AppError && (error.code === "order_not_found" || error.code === "table_not_found")) {
      return plainNotFound("No such order or table here.");
    }
    throw error;
  }
}
