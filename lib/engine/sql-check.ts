import { AppError } from "../errors";

/**
 * The buyer's SQL (contract Part 7), checked on DuckDB's own parse (`json_serialize_sql`, which
 * serializes SELECT statements only and says "error" for anything else): exactly one SELECT (or
 * WITH ... SELECT); tables named without schema or catalog; no table function but
 * range/generate_series/unnest (files are read through the views only); no function that reads the
 * engine's settings or environment. The tables it names are a hint of the views to make, CTEs'
 * names left out (by name, whatever their scope): what the query reads is decided by DuckDB's
 * binder once they are made (./plan-check.ts). The sandbox (./task-engine.ts withTaskEngine:
 * external access off but the order's files, configuration locked) holds whatever passes. Pure.
 */

/** The table functions a query may call: they read nothing. */
export const TABLE_FUNCTIONS: ReadonlySet<string> = new Set(["range", "generate_series", "unnest"]);
/** Scalar functions that read the engine's configuration or environment (server paths). */
const DENIED_FUNCTIONS = new Set(["current_setting", "getenv", "getvariable", "current_schemas", "current_catalog"]);
const DENIED_PREFIXES = ["duckdb_", "pg_", "pragma_"];

const invalid = (detail: string) => new AppError("invalid_sql", detail);

type Serialized = {
  error?: boolean;
  error_message?: string;
  error_type?: string;
  position?: string;
  statements?: { node: unknown }[];
};

/**
 * The statement of `json_serialize_sql(sql)`'s answer, once it is exactly one SELECT; the names
 * of the tables it reads (views to make), CTEs left out; every table name it holds (`names`).
 */
export function checkSelect(
  serialized: string,
  sql: string,
): { statement: unknown; tables: string[]; names: string[] } {
  const parsed = JSON.parse(serialized) as Serialized;
  if (parsed.error) {
    if (parsed.error_type === "parser") {
      const at = Number(parsed.position);
      const where = Number.isInteger(at) ? ` at character ${at + 1} (${JSON.stringify(sql.slice(at, at + 20))})` : "";
      throw invalid(`${parsed.error_message ?? "syntax error"}${where}.`);
    }
    throw invalid(
      "only one read-only query is allowed (a SELECT, or WITH … SELECT): nothing that writes, attaches, installs, loads, creates or sets.",
    );
  }
  const statements = parsed.statements ?? [];
  if (statements.length !== 1) {
    throw invalid(`exactly one query is allowed, got ${statements.length} statements.`);
  }
  const found = { tables: new Set<string>(), ctes: new Set<string>() };
  walk(statements[0]!.node, found);
  const names = [...found.tables];
  const tables = names.filter((name) => !found.ctes.has(name.toLowerCase()));
  return { statement: statements[0], tables, names };
}

function walk(value: unknown, found: { tables: Set<string>; ctes: Set<string> }): void {
  if (Array.isArray(value)) {
    for (const item of value) walk(item, found);
    return;
  }
  if (!value || typeof value !== "object") return;
  const node = value as Record<string, unknown>;
  if (node.type === "BASE_TABLE") {
    const name = String(node.table_name ?? "");
    if (node.schema_name || node.catalog_name) {
      throw invalid(
        `${JSON.stringify([node.catalog_name, node.schema_name, name].filter(Boolean).join("."))} is not a table of this order: name the order's tables alone, e.g. "${name}".`,
      );
    }
    found.tables.add(name);
  }
  // DESCRIBE, SHOW and SUMMARIZE parse as a SELECT over a SHOW_REF: not a query of the order's data.
  if (node.type === "SHOW_REF") {
    throw invalid(
      "DESCRIBE, SHOW and SUMMARIZE are not allowed: one SELECT (or WITH … SELECT) only; the order's tables and their columns are listed with the order (GET /orders/{id}).",
    );
  }
  if (node.type === "TABLE_FUNCTION") {
    const name = String((node.function as { function_name?: string } | undefined)?.function_name ?? "");
    if (!TABLE_FUNCTIONS.has(name.toLowerCase())) {
      throw invalid(
        `the table function ${name} is not allowed: read the order's tables by their names (${[...TABLE_FUNCTIONS].join(", ")} are allowed).`,
      );
    }
  }
  if (node.class === "FUNCTION") {
    const name = String(node.function_name ?? "").toLowerCase();
    if (
      (node.schema && node.schema !== "main") ||
      node.catalog ||
      DENIED_FUNCTIONS.has(name) ||
      DENIED_PREFIXES.some((p) => name.startsWith(p))
    ) {
      throw invalid(`the function ${String(node.function_name)} is not allowed.`);
    }
  }
  const ctes = (node.cte_map as { map?: { key?: string }[] } | undefined)?.map;
  for (const cte of ctes ?? []) if (cte.key) found.ctes.add(cte.key.toLowerCase());
  for (const inner of Object.values(node)) walk(inner, found);
}
