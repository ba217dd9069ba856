import { compareDecimals, decimalOfNumber, parseDecimal, type Decimal } from "../engine/decimal-text";
import { statsKindOf, type ColumnStats, type StatsKind, type StatsValue } from "../engine/parquet-stats";

/**
 * File skipping with `jsonPredicateHints` (PROTOCOL.md, "JSON predicates for Filtering"): a part is
 * left out of a query's answer only when its statistics prove that no row of it can satisfy the
 * predicate. Everything else keeps it: an op, value type or column this does not know, a column
 * without bounds, a literal that does not parse, a predicate that is not valid JSON (the protocol:
 * on any error, skip filtering). Hints are hints: the client filters the rows again.
 *
 * Each node is judged as what its rows can make it: `canTrue` (some row may make it true) and
 * `canFalse` (some row may make it false); a comparison with a null is neither, as in SQL. A part is
 * kept when the whole predicate `canTrue`. Bounds are compared only where the comparison is exact:
 * integers and decimals as exact decimals (a literal never goes through Number(): `1.00000000000000000001`
 * is not 1; a bound is the decimal its JSON number reads as), text by its UTF-8 bytes (Parquet's order), dates as
 * `yyyy-mm-dd`, timestamps as milliseconds. Floating-point columns are never used to skip (NaN
 * sorts above every number in Spark, and Parquet bounds leave it out).
 */

export type PartStats = { numRecords: number; stats: ColumnStats | null };
type Verdict = { canTrue: boolean; canFalse: boolean };

const UNKNOWN: Verdict = { canTrue: true, canFalse: true };
const MAX_DEPTH = 64;
const MAX_NODES = 1000;

type Node = { op?: unknown; children?: unknown; name?: unknown; value?: unknown; valueType?: unknown };

const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value);

/** A parsed predicate, or null when it cannot be used (then every part is kept): not text, not JSON, not an object. */
export function parsePredicate(text: unknown): Node | null {
  if (typeof text !== "string" || !text) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return isNode(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * Whether a query names a predicate, usable here or not (a malformed hint is ignored, never
 * refused): then the client filters before it limits, so `limitHint` cannot drop parts.
 */
export function hasPredicateHints(query: { jsonPredicateHints?: unknown; predicateHints?: unknown }): boolean {
  const { jsonPredicateHints: json, predicateHints: sql } = query;
  return (json ?? "") !== "" || (Array.isArray(sql) ? sql.length > 0 : sql != null);
}

/** Whether a part with these statistics and columns may hold a row the predicate keeps. */
export function partMayMatch(
  predicate: Node | null,
  part: PartStats,
  columns: { name: string; type: string }[],
): boolean {
  if (!predicate) return true;
  const types = new Map(columns.map((column) => [column.name, statsKindOf(column.type)]));
  const budget = { nodes: MAX_NODES };
  return judge(predicate, part, types, 0, budget).canTrue;
}

function judge(
  node: Node,
  part: PartStats,
  types: Map<string, StatsKind | undefined>,
  depth: number,
  budget: { nodes: number },
): Verdict {
  if (depth > MAX_DEPTH || --budget.nodes < 0 || !isNode(node)) return UNKNOWN;
  const children = Array.isArray(node.children) ? (node.children as unknown[]) : [];
  // A child that is not an object (null, a number, a list) makes the node one this cannot judge.
  if (!children.every(isNode)) return UNKNOWN;
  const sub = (child: Node) => judge(child, part, types, depth + 1, budget);
  switch (node.op) {
    case "and": {
      if (children.length < 1) return UNKNOWN;
      const verdicts = children.map(sub);
      return { canTrue: verdicts.every((v) => v.canTrue), canFalse: verdicts.some((v) => v.canFalse) };
    }
    case "or": {
      if (children.length < 1) return UNKNOWN;
      const verdicts = children.map(sub);
      return { canTrue: verdicts.some((v) => v.canTrue), canFalse: verdicts.every((v) => v.canFalse) };
    }
    case "not": {
      if (children.length !== 1) return UNKNOWN;
      const inner = sub(children[0]!);
      return { canTrue: inner.canFalse, canFalse: inner.canTrue };
    }
    case "isNull": {
      const column = children.length === 1 ? columnOf(children[0]!, types) : undefined;
      if (!column) return UNKNOWN;
      const nulls = part.stats?.nullCount[column.name];
      if (nulls === undefined) return UNKNOWN;
      return { canTrue: nulls > 0, canFalse: nulls < part.numRecords };
    }
    case "equal":
    case "lessThan":
    case "lessThanOrEqual":
    case "greaterThan":
    case "greaterThanOrEqual":
      return comparison(node.op, children, part, types);
    default:
      return UNKNOWN;
  }
}

type Op = "equal" | "lessThan" | "lessThanOrEqual" | "greaterThan" | "greaterThanOrEqual";
const FLIPPED: Record<Op, Op> = {
  equal: "equal",
  lessThan: "greaterThan",
  lessThanOrEqual: "greaterThanOrEqual",
  greaterThan: "lessThan",
  greaterThanOrEqual: "lessThanOrEqual",
};

/** `column op literal` (or `literal op column`) against the column's bounds. */
function comparison(op: Op, children: Node[], part: PartStats, types: Map<string, StatsKind | undefined>): Verdict {
  if (children.length !== 2) return UNKNOWN;
  let [left, right] = children as [Node, Node];
  if (left.op === "literal" && right.op === "column") {
    [left, right] = [right, left];
    op = FLIPPED[op];
  }
  const column = columnOf(left, types);
  if (!column || right.op !== "literal" || typeof right.value !== "string") return UNKNOWN;
  const literal = literalOf(column.kind, right.valueType, right.value);
  if (literal === undefined) return UNKNOWN;
  const nulls = part.stats?.nullCount[column.name];
  // Every value null: a comparison is never true, and never false.
  if (nulls !== undefined && nulls >= part.numRecords) return { canTrue: false, canFalse: false };
  const min = part.stats?.minValues[column.name];
  const max = part.stats?.maxValues[column.name];
  if (min === undefined || max === undefined) return UNKNOWN;
  const lo = compare(column.kind, min, literal);
  const hi = compare(column.kind, max, literal);
  if (lo === undefined || hi === undefined) return UNKNOWN;
  // lo: min vs literal; hi: max vs literal (each -1, 0 or 1).
  switch (op) {
    case "equal":
      return { canTrue: lo <= 0 && hi >= 0, canFalse: !(lo === 0 && hi === 0) };
    case "lessThan":
      return { canTrue: lo < 0, canFalse: hi >= 0 };
    case "lessThanOrEqual":
      return { canTrue: lo <= 0, canFalse: hi > 0 };
    case "greaterThan":
      return { canTrue: hi > 0, canFalse: lo <= 0 };
    case "greaterThanOrEqual":
      return { canTrue: hi >= 0, canFalse: lo < 0 };
  }
}

/** A column op naming a column of the part whose kind can be compared. */
function columnOf(
  node: Node,
  types: Map<string, StatsKind | undefined>,
): { name: string; kind: StatsKind } | undefined {
  if (node.op !== "column" || typeof node.name !== "string") return undefined;
  const kind = types.get(node.name);
  if (!kind || kind === "float" || kind === "nulls-only") return undefined;
  return { name: node.name, kind };
}

const NUMERIC_TYPES = new Set(["int", "long"]);

type Literal = StatsValue | Decimal;

/** The literal as the column's bounds are compared, when its value type fits the column. */
function literalOf(kind: StatsKind, valueType: unknown, value: string): Literal | undefined {
  switch (kind) {
    case "integer":
    case "decimal": {
      // A decimal column compared with a float or double literal is compared as decimals too.
      const fits =
        NUMERIC_TYPES.has(String(valueType)) || (kind === "decimal" && /^(float|double)$/.test(String(valueType)));
      return fits ? parseDecimal(value) : undefined;
    }
    case "text":
      return valueType === "string" ? value : undefined;
    case "date":
      return valueType === "date" && /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : undefined;
    case "timestamp": {
      if (valueType !== "timestamp") return undefined;
      // With a zone, and no finer than milliseconds (the bounds are rounded to them).
      if (!/^[^.]*(\.\d{1,3})?(Z|[+-]\d{2}:?\d{2})$/.test(value)) return undefined;
      const ms = Date.parse(value);
      return Number.isFinite(ms) ? ms : undefined;
    }
    default:
      return undefined;
  }
}

/** -1, 0 or 1 as a bound compares with the literal; undefined when they cannot be compared. */
function compare(kind: StatsKind, bound: StatsValue, literal: Literal): number | undefined {
  switch (kind) {
    case "integer":
    case "decimal": {
      const exact = typeof bound === "number" ? decimalOfNumber(bound) : undefined;
      return exact && typeof literal === "object" ? compareDecimals(exact, literal) : undefined;
    }
    case "text":
      return typeof bound === "string" && typeof literal === "string"
        ? Math.sign(Buffer.compare(Buffer.from(bound, "utf8"), Buffer.from(literal, "utf8")))
        : undefined;
    case "date":
      // yyyy-mm-dd compares as ASCII text.
      return typeof bound === "string" && typeof literal === "string"
        ? bound < literal
          ? -1
          : bound > literal
            ? 1
            : 0
        : undefined;
    case "timestamp": {
      const ms = typeof bound === "string" ? Date.parse(bound) : NaN;
      return Number.isFinite(ms) && typeof literal === "number" ? Math.sign(ms - literal) : undefined;
    }
    default:
      return undefined;
  }
}
