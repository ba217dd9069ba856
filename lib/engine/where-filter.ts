import { AppError } from "../errors";
import { sqlIdentifier, sqlString } from "./engine";

/**
 * The `where` of a rows request (contract Part 7): parsed by DuckDB's own parser
 * (`json_serialize_sql`, in the engine process: ./query-tasks.ts), the tree walked against the
 * contract's allow-list, and the SQL that runs RENDERED here from the checked tree (identifiers
 * quoted, literals escaped): the buyer's text never reaches DuckDB as SQL. Before the parser sees it,
 * the text is lexed here (strings and quoted names set aside) for what the parsed tree no longer
 * shows (`;`, comments) and for nesting the parser should never be asked to recurse through. Pure.
 */

export const WHERE_MAX_CHARS = 4000;
export const WHERE_MAX_DEPTH = 64;
/** What the where is parsed inside: query locations in the tree count from its start. */
export const WHERE_PARSE_PREFIX = "SELECT * FROM t WHERE ";

export const FILTER_FUNCTIONS = [
  "lower",
  "upper",
  "length",
  "trim",
  "abs",
  "round",
  "coalesce",
  "date_trunc",
  "year",
  "month",
  "day",
  "contains",
  "starts_with",
] as const;
const FUNCTIONS = new Set<string>(FILTER_FUNCTIONS);

/** DuckDB's names of the LIKE family, as the parser writes them. */
const LIKE_OPERATORS: Record<string, string> = {
  "~~": "LIKE",
  "!~~": "NOT LIKE",
  "~~*": "ILIKE",
  "!~~*": "NOT ILIKE",
};
const COMPARISONS: Record<string, string> = {
  COMPARE_EQUAL: "=",
  COMPARE_NOTEQUAL: "<>",
  COMPARE_LESSTHAN: "<",
  COMPARE_GREATERTHAN: ">",
  COMPARE_LESSTHANOREQUALTO: "<=",
  COMPARE_GREATERTHANOREQUALTO: ">=",
};
const NUMBER_TYPES = new Set([
  "TINYINT",
  "SMALLINT",
  "INTEGER",
  "BIGINT",
  "HUGEINT",
  "UTINYINT",
  "USMALLINT",
  "UINTEGER",
  "UBIGINT",
  "UHUGEINT",
  "DECIMAL",
  "FLOAT",
  "DOUBLE",
]);
const CAST_TYPES: Record<string, string> = { DATE: "DATE", TIMESTAMP: "TIMESTAMP", BOOLEAN: "BOOLEAN" };

const invalid = (detail: string) => new AppError("invalid_filter", `where: ${detail}`);

/**
 * Refuses what the parsed tree would hide or what must not reach the parser: a `;`, a comment, a
 * `$` (parameters, dollar-quoted strings), an unterminated string or name, nesting deeper than
 * WHERE_MAX_DEPTH, text longer than WHERE_MAX_CHARS. Strings ('...', E'...') and quoted names are
 * skipped whole, so their content is never taken for any of these.
 */
export function lexFilter(text: string): void {
  if (text.length > WHERE_MAX_CHARS) {
    throw invalid(`it is ${text.length} characters long; at most ${WHERE_MAX_CHARS} are allowed.`);
  }
  if (text.trim() === "") throw invalid("it is empty; leave it out to have every row.");
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    const at = ` (at character ${i + 1})`;
    if (char === "'" || char === '"') {
      const backslashes = char === "'" && /[eE]/.test(text[i - 1] ?? "") && !/\w/.test(text[i - 2] ?? "");
      i = closingQuote(text, i, backslashes);
      if (i < 0) throw invalid(`${char === "'" ? "a string" : "a quoted name"} is not closed${at}.`);
    } else if (char === ";") throw invalid(`";" is not allowed: one expression only${at}.`);
    else if (text.startsWith("--", i) || text.startsWith("/*", i)) {
      throw invalid(`a comment ("${text.slice(i, i + 2)}") is not allowed${at}.`);
    } else if (char === "$") throw invalid(`"$" is not allowed${at}.`);
    else if (char === "(" && ++depth > WHERE_MAX_DEPTH) {
      throw invalid(`parentheses nest deeper than ${WHERE_MAX_DEPTH} levels${at}.`);
    } else if (char === ")") depth--;
  }
}

/**
 * How deep parentheses nest in SQL text, strings, quoted names and comments aside: a query nested
 * thousands deep is refused before DuckDB's parser recurses through it (its stack is the engine
 * process's).
 */
export function parenthesisDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === "'" || char === '"') {
      const backslashes = char === "'" && /[eE]/.test(text[i - 1] ?? "") && !/\w/.test(text[i - 2] ?? "");
      const end = closingQuote(text, i, backslashes);
      if (end < 0) break;
      i = end;
    } else if (text.startsWith("--", i)) {
      const end = text.indexOf("\n", i);
      i = end < 0 ? text.length : end;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 1;
    } else if (char === "(") deepest = Math.max(deepest, ++depth);
    else if (char === ")") depth--;
  }
  return deepest;
}

/** The index of the quote closing the one at `start` (doubled quotes, and backslash escapes in E'...', stay inside), or -1. */
function closingQuote(text: string, start: number, backslashes: boolean): number {
  const quote = text[start];
  for (let i = start + 1; i < text.length; i++) {
    if (backslashes && text[i] === "\\") i++;
    else if (text[i] === quote) {
      if (text[i + 1] === quote) i++;
      else return i;
    }
  }
  return -1;
}

type Node = {
  class: string;
  type: string;
  alias?: string;
  query_location?: number;
  [field: string]: unknown;
};

type Walk = {
  source: string;
  columns: string[];
  offenders: { at: number; detail: string }[];
  unknown?: string;
};

/**
 * The SQL of a parsed `where` (the WHERE clause of `json_serialize_sql(WHERE_PARSE_PREFIX || where)`),
 * rendered from the tree once every node is allowed. Refusals name the first offending token in
 * the text (invalid_filter); a column the table lacks is unknown_column.
 */
export function renderFilter(tree: unknown, source: string, columns: string[]): string {
  const walk: Walk = { source, columns, offenders: [] };
  const sql = renderCondition(tree as Node, walk);
  if (walk.offenders.length > 0) {
    const first = walk.offenders.reduce((a, b) => (b.at < a.at ? b : a));
    throw invalid(first.detail);
  }
  if (walk.unknown !== undefined) throw unknownColumn("where", walk.unknown, columns);
  return sql;
}

/** Where the node starts in the buyer's text (0-based), or Infinity when DuckDB did not say. */
function locationOf(node: Node, walk: Walk): number {
  const at = Number(node.query_location ?? NaN) - WHERE_PARSE_PREFIX.length;
  return Number.isSafeInteger(at) && at >= 0 && at < walk.source.length ? at : Infinity;
}

/** The token of the text at `at`: a quoted string or name, a word, an operator (`::`, `||`), or one character. */
function tokenAt(source: string, at: number): string {
  const match = /^(?:'(?:[^']|'')*'|"(?:[^"]|"")*"|[\p{L}\p{N}_]+|[!#%&*+\-/:<=>?@^|~]+|\S)/u.exec(source.slice(at));
  const token = match?.[0] ?? "";
  return token.length > 40 ? `${token.slice(0, 40)}…` : token;
}

function refuse(node: Node, walk: Walk, what: string, at = locationOf(node, walk)): string {
  const token = at === Infinity ? "" : `"${tokenAt(walk.source, at)}" at character ${at + 1}: `;
  walk.offenders.push({ at, detail: `${token}${what}.` });
  return "NULL";
}

/**
 * Where a subquery's own text starts: DuckDB places the node at what introduces it (`IN`, `=`'s
 * operand, `EXISTS`), so the first word inside the parenthesis after that is named (`SELECT`).
 * Only the error's wording: the refusal itself comes from the tree.
 */
function subqueryStart(node: Node, walk: Walk): number {
  const at = locationOf(node, walk);
  if (at === Infinity) return at;
  const open = walk.source.indexOf("(", at);
  const inside = open < 0 ? -1 : walk.source.slice(open + 1).search(/\S/);
  return inside < 0 ? at : open + 1 + inside;
}

/** Functions of the allow-list whose value is no condition (a number, a text, a date): all but these three. */
const VALUE_FUNCTIONS = new Set<string>(
  FILTER_FUNCTIONS.filter((name) => name !== "coalesce" && name !== "contains" && name !== "starts_with"),
);

/**
 * Whether a node can be a condition (true or false for each row): what the filter is, and what AND,
 * OR and NOT join. A bare number, text, date or value function is not (DuckDB would read `WHERE id`
 * as `id <> 0`); a column may be (a BOOLEAN one), and so may coalesce.
 */
function isCondition(node: Node): boolean {
  if (!node || typeof node !== "object") return true;
  if (node.class === "CONSTANT") {
    const value = node.value as ConstantValue | undefined;
    return Boolean(value?.is_null) || value?.type?.id === "BOOLEAN";
  }
  if (node.class === "CAST") return (node.cast_type as { id?: string } | undefined)?.id === "BOOLEAN";
  if (node.class === "FUNCTION") return !VALUE_FUNCTIONS.has(String(node.function_name ?? "").toLowerCase());
  return true;
}

/** `node` rendered, refused when it cannot be a condition. */
function renderCondition(node: Node, walk: Walk): string {
  const sql = render(node, walk);
  if (isCondition(node)) return sql;
  return refuse(node, walk, "is not a condition: a filter is true or false for each row (e.g. id = 1, name IS NULL)");
}

function render(node: Node, walk: Walk): string {
  if (!node || typeof node !== "object") return refuse({ class: "", type: "" }, walk, "an empty expression");
  if (node.alias) return refuse(node, walk, "an alias is not allowed in a filter");
  const children = (node.children ?? []) as Node[];
  switch (node.class) {
    case "CONJUNCTION":
      if (node.type !== "CONJUNCTION_AND" && node.type !== "CONJUNCTION_OR") break;
      return `(${children.map((child) => renderCondition(child, walk)).join(node.type === "CONJUNCTION_AND" ? " AND " : " OR ")})`;
    case "COMPARISON": {
      const operator = COMPARISONS[node.type];
      if (!operator) break;
      return `(${render(node.left as Node, walk)} ${operator} ${render(node.right as Node, walk)})`;
    }
    case "BETWEEN":
      return `(${render(node.input as Node, walk)} BETWEEN ${render(node.lower as Node, walk)} AND ${render(node.upper as Node, walk)})`;
    case "OPERATOR":
      return renderOperator(node, children, walk);
    case "FUNCTION":
      return renderFunction(node, children, walk);
    case "COLUMN_REF":
      return renderColumn(node, walk);
    case "CONSTANT":
    case "CAST":
      return renderLiteral(node, walk);
    case "SUBQUERY":
      return refuse(node, walk, "a subquery is not allowed in a filter", subqueryStart(node, walk));
  }
  return refuse(node, walk, `${describeNode(node)} is not allowed in a filter`);
}

function renderOperator(node: Node, children: Node[], walk: Walk): string {
  const [first, ...rest] = children;
  switch (node.type) {
    case "OPERATOR_NOT":
      return `(NOT ${renderCondition(first!, walk)})`;
    case "OPERATOR_IS_NULL":
      return `(${render(first!, walk)} IS NULL)`;
    case "OPERATOR_IS_NOT_NULL":
      return `(${render(first!, walk)} IS NOT NULL)`;
    case "COMPARE_IN":
    case "COMPARE_NOT_IN": {
      const list = rest.map((item) =>
        item.class === "CONSTANT" || item.class === "CAST"
          ? renderLiteral(item, walk)
          : refuse(item, walk, "IN (...) takes literals only"),
      );
      return `(${render(first!, walk)} ${node.type === "COMPARE_IN" ? "IN" : "NOT IN"} (${list.join(", ")}))`;
    }
    case "OPERATOR_COALESCE":
      return `coalesce(${children.map((child) => render(child, walk)).join(", ")})`;
  }
  return refuse(node, walk, `${describeNode(node)} is not allowed in a filter`);
}

function renderFunction(node: Node, children: Node[], walk: Walk): string {
  const name = String(node.function_name ?? "");
  // DuckDB's grammar gives a few functions (trim) the schema "main" itself: unqualified as written.
  const at = locationOf(node, walk);
  const unqualified =
    !node.schema ||
    (node.schema === "main" && at !== Infinity && tokenAt(walk.source, at).toLowerCase() === name.toLowerCase());
  const plain =
    unqualified &&
    !node.catalog &&
    !node.distinct &&
    !node.filter &&
    !node.export_state &&
    ((node.order_bys as { orders?: unknown[] } | undefined)?.orders?.length ?? 0) === 0;
  const like = LIKE_OPERATORS[name];
  if (like && plain && children.length === 2) {
    return `(${render(children[0]!, walk)} ${like} ${render(children[1]!, walk)})`;
  }
  if (FUNCTIONS.has(name.toLowerCase()) && plain) {
    return `${name.toLowerCase()}(${children.map((child) => render(child, walk)).join(", ")})`;
  }
  const what = node.is_operator
    ? `the operator ${name} is not allowed in a filter`
    : `the function ${name} is not allowed in a filter (allowed: ${FILTER_FUNCTIONS.join(", ")})`;
  return refuse(node, walk, what);
}

function renderColumn(node: Node, walk: Walk): string {
  const names = (node.column_names ?? []) as string[];
  if (names.length !== 1) return refuse(node, walk, "a qualified column name is not allowed: name the column alone");
  const [name] = names as [string];
  const exact = walk.columns.find((column) => column === name);
  const folded = walk.columns.filter((column) => column.toLowerCase() === name.toLowerCase());
  const column = exact ?? (folded.length === 1 ? folded[0] : undefined);
  if (column !== undefined) return sqlIdentifier(column);
  walk.unknown ??= name;
  return "NULL";
}

/** A literal: a string, a number (as written, checked to be one), true/false, NULL, or DATE/TIMESTAMP '...'. */
function renderLiteral(node: Node, walk: Walk): string {
  if (node.class === "CAST") {
    const child = node.child as Node;
    const target = CAST_TYPES[String((node.cast_type as { id?: string } | undefined)?.id)];
    const value = child?.class === "CONSTANT" ? (child.value as ConstantValue) : undefined;
    if (!target || node.try_cast || !value || value.is_null || value.type?.id !== "VARCHAR") {
      // The cast itself is named (`CAST`, `TRY_CAST`, `::`), where DuckDB says where it is.
      const named = locationOf(node, walk) !== Infinity ? node : (child ?? node);
      return refuse(named, walk, "a cast is not allowed in a filter (DATE '...' and TIMESTAMP '...' are)");
    }
    return `CAST(${sqlString(String(value.value))} AS ${target})`;
  }
  const value = node.value as ConstantValue;
  if (value.is_null) return "NULL";
  const type = value.type?.id ?? "";
  if (type === "VARCHAR") return sqlString(String(value.value));
  if (type === "BOOLEAN") return value.value ? "TRUE" : "FALSE";
  if (NUMBER_TYPES.has(type)) {
    const at = locationOf(node, walk);
    // The whole number as written (`1_000` too, which DuckDB reads as 1000), never a prefix of it.
    const written = at === Infinity ? undefined : WRITTEN_NUMBER.exec(walk.source.slice(at));
    if (written) return written[0].replace(/[\s_]+/g, "");
    return refuse(node, walk, "this number is not written as digits");
  }
  return refuse(node, walk, `a literal of type ${type} is not allowed in a filter`);
}

const DIGITS = String.raw`\d(?:_?\d)*`;
/** A number literal as DuckDB reads it: digits with single underscores between, a fraction, an exponent; nothing after. */
const WRITTEN_NUMBER = new RegExp(
  String.raw`^-?\s*(?:${DIGITS}(?:\.(?:${DIGITS})?)?|\.${DIGITS})(?:[eE][+-]?${DIGITS})?(?![\p{L}\p{N}_.])`,
  "u",
);

type ConstantValue = { type?: { id?: string }; is_null?: boolean; value?: unknown };

function describeNode(node: Node): string {
  const known: Record<string, string> = {
    STAR: "*",
    CASE: "CASE",
    WINDOW: "a window function",
    LAMBDA: "a lambda",
    PARAMETER: "a parameter",
    COLLATE: "COLLATE",
  };
  return known[node.class] ?? `${node.class.toLowerCase()} (${node.type.toLowerCase()})`;
}

/** unknown_column naming the column and, briefly, the table's columns. */
export function unknownColumn(parameter: string, name: string, columns: string[]): AppError {
  const list = columns.slice(0, 20).join(", ") + (columns.length > 20 ? ", …" : "");
  return new AppError(
    "unknown_column",
    `${parameter}: the table has no column ${JSON.stringify(name.slice(0, 100))} (its columns: ${list}).`,
  );
}
