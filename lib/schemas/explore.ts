import { z } from "zod";
import { RENDITION_FORMATS } from "../data-formats";
import { versionNumberSchema } from "./api";
import { QUERY_ROWS, SQL_MAX_LENGTH } from "./explore-limits";
import { wholeNumber } from "./whole-number";

/**
 * The rows and SQL requests of /api/v1 (docs/explore.md), described once: the API's
 * validation and its OpenAPI document use these. A leaf like ./api.ts.
 */

const limitRule = `limit must be from ${QUERY_ROWS.min} to ${QUERY_ROWS.max}`;
const limit = wholeNumber("limit", limitRule)
  .pipe(z.number().min(QUERY_ROWS.min, limitRule).max(QUERY_ROWS.max, limitRule))
  .optional()
  .default(QUERY_ROWS.default)
  .meta({
    description: `Rows, ${QUERY_ROWS.min} to ${QUERY_ROWS.max}; ${QUERY_ROWS.default} when not given.`,
    example: "100",
  });

const version = versionNumberSchema
  .optional()
  .meta({ description: "Version number; the current version when not given.", example: "3" });
const columns = z
  .string()
  .optional()
  .transform((text) => (text === undefined ? undefined : text.split(",").map((name) => name.trim())))
  .meta({ description: "Comma-separated column names; all when not given.", example: "sku,title,price_eur" });
const where = z
  .string()
  .optional()
  .meta({
    description:
      "One boolean expression over the columns, at most 4,000 characters: comparisons (`= <> != < <= > >=`), `AND`, " +
      "`OR`, `NOT`, parentheses, `IS [NOT] NULL`, `[NOT] IN (...)`, `[NOT] BETWEEN`, `[NOT] LIKE`, `[NOT] ILIKE`; " +
      "string, number, `true`/`false`, `NULL`, `DATE '2026-01-31'` and `TIMESTAMP '2026-01-31 08:00'` literals; column " +
      'names bare or in double quotes (`"Sold At"`); and the functions `lower`, `upper`, `length`, `trim`, `abs`, ' +
      "`round`, `coalesce`, `date_trunc`, `year`, `month`, `day`, `contains`, `starts_with`. Anything else (a " +
      "subquery, another function, a cast, `CASE`, a `;`) is 400 `invalid_filter`.",
    example: "in_stock AND price_eur < 10",
  });

export const rowsQuerySchema = z
  .object({
    version,
    columns,
    where,
    order_by: z.string().optional().meta({
      description: "`col [asc|desc]`, comma-separated; the key columns, else file order, when not given.",
      example: "price_eur desc",
    }),
    limit,
    offset: wholeNumber("offset")
      .optional()
      .default(0)
      .meta({ description: "Position of the first row; use the previous page's next_offset.", example: "0" }),
  })
  .meta({ id: "RowsQuery" });

export const subsetQuerySchema = z
  .object({
    version,
    columns,
    where,
    format: z
      .enum(RENDITION_FORMATS, { error: `format must be one of ${RENDITION_FORMATS.join(", ")}` })
      .optional()
      .default("parquet")
      .meta({ description: "The file's format; parquet when not given.", example: "csv" }),
  })
  .meta({ id: "SubsetQuery" });

const resultColumnSchema = z
  .object({
    name: z.string().meta({ example: "price_eur" }),
    type: z.string().meta({ description: "The column's type as DuckDB names it.", example: "DOUBLE" }),
  })
  .meta({ id: "ResultColumn" });

const rowValues = z.array(z.array(z.unknown())).meta({
  description:
    "Rows as arrays in column order; values as in previews (dates ISO 8601, big integers and wide decimals as strings, text over 1,000 characters cut).",
});

export const rowsSchema = z
  .object({
    version: z.number().int().meta({ example: 3 }),
    columns: z.array(resultColumnSchema),
    rows: rowValues,
    next_offset: z.number().int().nullable().meta({
      description:
        "The next page's offset; null on the last page. A page whose rows would pass the answer's 8 MiB ends early: next_offset continues it.",
      example: 100,
    }),
  })
  .meta({ id: "RowsPage" });

export const sqlQuerySchema = z
  .object({
    q: z.string({ error: "q is required: one SELECT" }).meta({
      description:
        'One SELECT (or WITH ... SELECT) over the order\'s tables: `name` (current version), `"name@N"` (version N), `"name@changes"` (change rows with `_change_type` and `_commit_version`). ' +
        `At most ${SQL_MAX_LENGTH.toLocaleString("en-US")} characters.`,
      example: "SELECT in_stock, count(*) FROM products GROUP BY in_stock",
    }),
    limit,
  })
  .meta({ id: "SqlQuery" });

export const sqlSchema = z
  .object({
    columns: z.array(resultColumnSchema),
    rows: rowValues,
    truncated: z
      .boolean()
      .meta({ description: "More rows exist than were answered (`limit`, or the answer's 8 MiB).", example: false }),
    truncated_reason: z
      .enum(["rows", "bytes"])
      .optional()
      .meta({ description: "With truncated: what cut the rows, `limit` (rows) or the 8 MiB answer budget (bytes)." }),
  })
  .meta({ id: "SqlResult" });
