/**
 * The contract's bounds of one query (Part 7), defined once for the API's request schemas
 * (./explore.ts) and the Query page alike; free of zod, so the browser's bundle can carry them.
 */

/** Rows one answer carries: a page of rows, a SQL result, a Query page download. */
export const SQL_PAGE_LIMIT = 1000;
/** `limit` of the rows and SQL requests. */
export const QUERY_ROWS = { min: 1, max: SQL_PAGE_LIMIT, default: 100 } as const;
/** Characters of one SQL query (`q`). */
export const SQL_MAX_LENGTH = 8000;
