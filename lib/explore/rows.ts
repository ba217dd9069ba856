import type { AnswerColumn } from "../engine/answer-rows";
import type { QueryVia } from "../engine/engine-pool";
import { unknownColumn } from "../engine/where-filter";
import { AppError } from "../errors";
import { countEngineQuery } from "../metrics";
import { answerJson, queryAnswerMaxBytes } from "./answer-json";
import { runBuyerQuery } from "./engine-run";
import { readableParts } from "./files";
import { withCachedCopies } from "./query-cache";
import { resolveTableRequest, rowsOrder, type RowsSort, type TableRequest } from "./table-request";

/**
 * `GET /orders/{id}/tables/{name}/rows` (contract Part 7): a page of a version's rows, the columns
 * asked, filtered by a checked `where` (lib/engine/where-filter.ts), in a total order (the asked
 * sort, then the key, then where needed the parts' file order: ./table-request.ts rowsOrder), so
 * `offset` pages neither overlap nor skip. A page is at most `limit` rows and the answer budget's
 * bytes (./answer-json.ts): past it the page ends early and `next_offset` continues it.
 */

export type RowsRequest = TableRequest & {
  orderBy?: string;
  limit: number;
  offset: number;
  via: QueryVia;
  /** The answer's budget in bytes, if not the API's. */
  bytes?: number;
};
/** A page, its rows as the engine wrote them (JSON text). */
export type RowsPage = { version: number; columns: AnswerColumn[]; rowsJson: string; next_offset: number | null };

/** The page as the API answers it. */
export const rowsPageJson = ({ version, columns, rowsJson, next_offset }: RowsPage): string =>
  answerJson({ version, columns }, rowsJson, { next_offset });

export function readTableRows(request: RowsRequest): Promise<RowsPage> {
  return withCachedCopies(() => pageOfRows(request));
}

async function pageOfRows(request: RowsRequest): Promise<RowsPage> {
  const { table, version, parts, names, select } = await resolveTableRequest(request);
  const order = rowsOrder(table, request.orderBy === undefined ? [] : parseOrderBy(request.orderBy, names));
  const files = await readableParts(table, version.version, parts);
  const page = await runBuyerQuery(
    { ...request.via, account: request.buyerId },
    "tableRows",
    {
      files,
      // In the table's own types, as its preview gives them (the parts store some widened).
      columns: version.columns,
      select,
      where: request.where,
      ...order,
      limit: request.limit,
      offset: request.offset,
      bytes: request.bytes ?? queryAnswerMaxBytes(),
    },
    files,
  );
  if (page.cut === "bytes") countEngineQuery(request.via.door, "truncated_bytes");
  return {
    version: version.version,
    columns: page.columns,
    rowsJson: page.rowsJson,
    next_offset: page.cut ? request.offset + page.rowCount : null,
  };
}

const ORDER_ITEM = /^\s*(?:"((?:[^"]|"")+)"|([\p{L}_][\p{L}\p{N}_]*))(?:\s+(asc|desc))?\s*$/iu;

/** `col [asc|desc]`, comma-separated (a name with a comma or a space double-quoted); anything else is refused. */
export function parseOrderBy(text: string, names: string[]): RowsSort[] {
  const items = splitOutsideQuotes(text);
  const seen = new Set<string>();
  return items.map((item) => {
    const match = ORDER_ITEM.exec(item);
    if (!match) {
      throw new AppError(
        "invalid_request",
        `order_by: ${JSON.stringify(item.trim().slice(0, 80))} is not a column name with an optional asc or desc (expressions are not allowed).`,
      );
    }
    const name = match[1]?.replaceAll('""', '"') ?? match[2]!;
    if (!names.includes(name)) throw unknownColumn("order_by", name, names);
    if (seen.has(name)) throw new AppError("invalid_request", `order_by: ${JSON.stringify(name)} is named twice.`);
    seen.add(name);
    return { column: name, descending: match[3]?.toLowerCase() === "desc" };
  });
}

function splitOutsideQuotes(text: string): string[] {
  const items: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '"') quoted = !quoted;
    else if (text[i] === "," && !quoted) {
      items.push(text.slice(start, i));
      start = i + 1;
    }
  }
  items.push(text.slice(start));
  return items;
}
