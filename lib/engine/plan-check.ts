import type { DuckDBConnection } from "@duckdb/node-api";
import { AppError } from "../errors";
import { checkSelect, TABLE_FUNCTIONS } from "./sql-check";
import { serializedSql } from "./sql-parser";

/**
 * What a buyer's query reads, decided by DuckDB's binder (contract Part 8): the rendered query's
 * bound plan (`json_serialize_plan`, not optimized: binding only, nothing read) is walked for its
 * scans. Allowed: read_parquet of exactly the file list of one of the views made for it (a view's
 * parts, or one change file of a "name@changes" view) and the table functions that read nothing.
 * Anything else (DuckDB's catalog through a name a CTE hid from the parse, a macro over it, a file
 * that is not a view's) is refused before the query runs. The parse (./sql-check.ts) only says which
 * views to make; names resolve here as they will when the query runs.
 */

/** A checked query, the views made for it and the file lists its scans may read (each view's, as made). */
export type PlannedQuery = { sql: string; viewNames: string[]; readable: string[][] };

/**
 * The query DuckDB renders from its checked parse, once its bound plan reads only what it may: one
 * statement for both (the plan is the rendering's, what runs), about 0.5 ms over the rendering
 * alone. The parse goes to the deserializer as the serializer's own JSON text: through
 * JavaScript's numbers, its 64-bit fields (locations, big literals) would not survive.
 */
export async function checkedRendering(connection: DuckDBConnection, query: PlannedQuery): Promise<string> {
  const answer = await connection.runAndReadAll(
    "SELECT rendered, json_serialize_plan(rendered, skip_null := true, skip_empty := true, skip_default := true) " +
      "FROM (SELECT json_deserialize_sql($1::JSON) AS rendered)",
    [await serializedSql(query.sql)],
  );
  const [rendered, plan] = answer.getRows()[0] ?? [];
  const refused = refusedScan(String(plan ?? ""), query.readable);
  if (refused !== undefined) throw await refusal(connection, refused, query);
  return String(rendered ?? "");
}

type Plan = { error?: boolean; error_type?: string; error_message?: string; plans?: unknown[] };
type Scan = { type?: unknown; name?: unknown; function_data?: { files?: unknown } };

/** A scan of the plan (a table function's name) the query may not read, "" for a file, or undefined. */
export function refusedScan(serializedPlan: string, readable: string[][]): string | undefined {
  const plan = JSON.parse(serializedPlan) as Plan;
  if (plan.error) {
    // A binding error (an unknown column, a wrong type) is the buyer's, said as DuckDB says it.
    if (plan.error_type !== "not implemented") throw new Error(plan.error_message ?? "the query does not bind");
    // A plan DuckDB cannot write out (a reader whose binding has no serializer) cannot be checked: not run.
    throw new AppError("invalid_sql", "DuckDB cannot say what this query reads, so it is not run.");
  }
  const allowed = new Set(readable.map((files) => JSON.stringify(files)));
  const pending: unknown[] = [plan.plans];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) pending.push(...value);
    if (!value || typeof value !== "object" || Array.isArray(value)) continue;
    const node = value as Scan;
    if (node.type === "LOGICAL_GET") {
      const name = String(node.name ?? "").toLowerCase();
      if (name === "read_parquet") {
        if (!allowed.has(JSON.stringify(node.function_data?.files))) return "";
      } else if (!TABLE_FUNCTIONS.has(name)) {
        return name;
      }
    }
    pending.push(...Object.values(node));
  }
  return undefined;
}

const READS_ONLY =
  "a query reads the order's tables by their names and the table functions range, generate_series and unnest, nothing else.";

/**
 * The refusal naming what the buyer wrote where it can: a name of the query that DuckDB's catalog
 * holds (a view such as pg_settings or duckdb_views, which a CTE of the same name hid from the
 * parse), else the catalog function the plan reads (e.g. through a macro), never a path.
 */
async function refusal(connection: DuckDBConnection, scan: string, query: PlannedQuery): Promise<AppError> {
  if (scan === "")
    return new AppError("invalid_sql", `it reads a file that is not one of this order's tables: ${READS_ONLY}`);
  const catalog = await connection.runAndReadAll("SELECT DISTINCT lower(view_name) FROM duckdb_views() WHERE internal");
  const views = new Set(catalog.getRows().map(([name]) => String(name)));
  const made = new Set(query.viewNames.map((name) => name.toLowerCase()));
  const { names } = checkSelect(await serializedSql(query.sql), query.sql);
  const named = [...new Set(names)].filter((name) => views.has(name.toLowerCase()) && !made.has(name.toLowerCase()));
  const what = named.length > 0 ? named.map((name) => JSON.stringify(name)).join(", ") : `${scan}()`;
  return new AppError(
    "invalid_sql",
    `${what} ${named.length > 1 ? "are" : "is"} not a table of this order but DuckDB's catalog (${scan}): ${READS_ONLY}`,
  );
}
