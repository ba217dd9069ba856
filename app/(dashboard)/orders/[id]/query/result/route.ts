import { currentBuyer } from "@/lib/auth/session";
import { RESULT_FORMATS, resultFile } from "@/lib/explore/result-files";
import { SQL_MAX_LENGTH, SQL_PAGE_LIMIT } from "@/lib/schemas/explore-limits";
import { browserSql, browserSqlParquet } from "@/lib/http/browser-explore";
import { RENDITION_CONTENT_TYPES } from "@/lib/data-formats";
import { publicOrigin } from "@/lib/site";

const plain = (status: number, message: string) =>
  new Response(message, {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "private, no-store" },
  });

/** The API's statuses of the refusals that are not the query's own fault (else 400). */
const REFUSAL_STATUS: Record<string, number> = {
  order_not_found: 404,
  order_not_delivered: 409,
  query_timeout: 422,
  answer_too_large: 422,
  too_many_queries: 429,
};

/**
 * The Query page's download: the signed-in buyer's query on their order, run again with the
 * largest limit (SQL_PAGE_LIMIT rows), as CSV, JSON or Parquet (written by DuckDB, with the columns' types). A form POST (the text may be 8,000
 * characters, too long for a URL): the session cookie is SameSite=Lax, so another site's form
 * arrives without it, and a foreign Origin is refused besides.
 */
export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  const origin = request.headers.get("origin");
  if (origin && origin !== publicOrigin(request)) return plain(403, "This download is made from the Query page only.");
  const buyer = await currentBuyer();
  if (!buyer) return plain(401, "Your session has ended. Sign in again, then run the query again.");
  const { id } = await params;
  const form = await request.formData().catch(() => undefined);
  const sql = form?.get("sql");
  const format = RESULT_FORMATS.find((known) => known === form?.get("format"));
  if (typeof sql !== "string" || !sql.trim() || sql.length > SQL_MAX_LENGTH || !format)
    return plain(
      400,
      `Send one query of at most ${SQL_MAX_LENGTH} characters and a format: ${RESULT_FORMATS.join(", ")}.`,
    );
  const target = { buyerId: buyer.id, orderId: id };
  if (format === "parquet") {
    const written = await browserSqlParquet(target, sql, SQL_PAGE_LIMIT, request.signal);
    if (!written.ok) return plain(REFUSAL_STATUS[written.code ?? ""] ?? 400, written.error);
    return download(new Uint8Array(written.body), RENDITION_CONTENT_TYPES.parquet, format, written.truncated);
  }
  const answer = await browserSql(target, sql, SQL_PAGE_LIMIT, request.signal);
  if (!answer.ok) return plain(REFUSAL_STATUS[answer.code ?? ""] ?? 400, answer.error);
  const file = resultFile(answer.result, format);
  return download(file.body, file.contentType, format, answer.result.truncated);
}

function download(body: BodyInit, contentType: string, format: string, truncated: boolean): Response {
  return new Response(body, {
    headers: {
      "Content-Type": contentType,
      "Content-Disposition": `attachment; filename="query-result.${format}"`,
      "Cache-Control": "private, no-store",
      // Whether rows past the SQL_PAGE_LIMIT were left out.
      "X-Result-Truncated": String(truncated),
    },
  });
}
