/** A value as the API gives it: dates as ISO 8601 text, big integers and decimals as strings. */
export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

/** A column of an answer, its type as DuckDB names it. */
export type ResultColumn = { name: string; type: string };

/** One page of a table's rows, read on the server: `next_offset` null on the last page. */
export type RowsPage = { version: number; columns: ResultColumn[]; rows: Value[][]; next_offset: number | null };

/** What a rows read asks for (docs/explore.md): all optional. */
export type RowsOptions = {
  /** A version number; default the current one. */
  version?: number;
  /** The columns to answer, in this order; default all. */
  columns?: string[];
  /** One condition over the columns, checked and run on the server. */
  where?: string;
  /** `col [asc|desc]`, comma-separated; default the key columns, else file order. */
  orderBy?: string;
  /** Rows a page, 1 to 1000 (the server's default 100). */
  limit?: number;
  offset?: number;
};

/** A SQL answer: at most `limit` rows; `truncated` says more exist. */
export type SqlResult = { columns: ResultColumn[]; rows: Value[][]; truncated: boolean };

/**
 * Rows and SQL over an order's tables, answered by the server's sandboxed engine (contract Part 7).
 * `getJson` is the client's own GET (retries, pacing, typed problems); `orderPath` an order's URL.
 */
export function exploreMethods(getJson: <T>(url: string) => Promise<T>, orderPath: (orderId: string) => string) {
  const tableUrl = (orderId: string, table: string) => `${orderPath(orderId)}/tables/${encodeURIComponent(table)}`;

  /** One page of a table's rows through `options` (a filter, columns, an order, a page). */
  function rows(orderId: string, table: string, options: RowsOptions = {}): Promise<RowsPage> {
    const query = new URLSearchParams();
    if (options.version !== undefined) query.set("version", String(options.version));
    if (options.columns) query.set("columns", options.columns.join(","));
    if (options.where !== undefined) query.set("where", options.where);
    if (options.orderBy !== undefined) query.set("order_by", options.orderBy);
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    if (options.offset !== undefined) query.set("offset", String(options.offset));
    return getJson<RowsPage>(`${tableUrl(orderId, table)}/rows?${query}`);
  }

  /**
   * Every page from `options.offset` on, following `next_offset`; every page is read from the
   * version of the first, so a version published meanwhile never mixes into the pages.
   */
  async function* rowPages(orderId: string, table: string, options: RowsOptions = {}): AsyncGenerator<RowsPage> {
    let page = await rows(orderId, table, options);
    yield page;
    while (page.next_offset !== null) {
      page = await rows(orderId, table, { ...options, version: page.version, offset: page.next_offset });
      yield page;
    }
  }

  /** One read-only SELECT over the order's tables ("name", "name@N", "name@changes"); `limit` 1 to 1000. */
  function sql(orderId: string, query: string, { limit }: { limit?: number } = {}): Promise<SqlResult> {
    const params = new URLSearchParams({ q: query });
    if (limit !== undefined) params.set("limit", String(limit));
    return getJson<SqlResult>(`${orderPath(orderId)}/sql?${params}`);
  }

  return { rows, rowPages, sql };
}

/** Rows (arrays in column order) as objects keyed by column name. */
export function rowObjects(columns: ResultColumn[], rows: Value[][]): Record<string, Value>[] {
  return rows.map((row) => Object.fromEntries(columns.map((column, at) => [column.name, row[at] ?? null])));
}
