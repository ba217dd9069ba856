import { describe, expect, it } from "vitest";
import { hasPredicateHints, parsePredicate, partMayMatch, type PartStats } from "./predicates";

const columns = [
  { name: "id", type: "BIGINT" },
  { name: "price", type: "DECIMAL(10,2)" },
  { name: "score", type: "DOUBLE" },
  { name: "name", type: "VARCHAR" },
  { name: "day", type: "DATE" },
  { name: "at", type: "TIMESTAMP WITH TIME ZONE" },
  { name: "note", type: "VARCHAR" },
];

/** A part of ids 100..199, names "b".."m", days in March 2026, half its notes null. */
const part: PartStats = {
  numRecords: 100,
  stats: {
    minValues: { id: 100, price: 1.5, score: 0, name: "b", day: "2026-03-01", at: "2026-03-01T10:00:00.000Z" },
    maxValues: { id: 199, price: 9.25, score: 1, name: "m", day: "2026-03-31", at: "2026-03-31T10:00:00.124Z" },
    nullCount: { id: 0, price: 0, score: 0, name: 0, day: 0, at: 0, note: 50 },
  },
};
const allNull: PartStats = { numRecords: 10, stats: { minValues: {}, maxValues: {}, nullCount: { id: 10 } } };

const column = (name: string, valueType: string) => ({ op: "column", name, valueType });
const literal = (value: string, valueType: string) => ({ op: "literal", value, valueType });
const cmp = (op: string, name: string, value: string, valueType: string) => ({
  op,
  children: [column(name, valueType), literal(value, valueType)],
});
const may = (predicate: unknown, of: PartStats = part) =>
  partMayMatch(parsePredicate(JSON.stringify(predicate)), of, columns);

describe("jsonPredicateHints against a part's statistics", () => {
  it.each([
    [cmp("equal", "id", "150", "long"), true],
    [cmp("equal", "id", "100", "int"), true],
    [cmp("equal", "id", "99", "long"), false],
    [cmp("equal", "id", "200", "long"), false],
    [cmp("lessThan", "id", "100", "long"), false],
    [cmp("lessThanOrEqual", "id", "100", "long"), true],
    [cmp("greaterThan", "id", "199", "long"), false],
    [cmp("greaterThanOrEqual", "id", "199", "long"), true],
    [cmp("greaterThan", "price", "9.25", "double"), false],
    [cmp("greaterThan", "price", "9.2", "double"), true],
    [cmp("equal", "name", "a", "string"), false],
    [cmp("equal", "name", "c", "string"), true],
    [cmp("greaterThan", "name", "m", "string"), false],
    [cmp("equal", "day", "2026-04-01", "date"), false],
    [cmp("equal", "day", "2026-03-15", "date"), true],
    [cmp("greaterThan", "at", "2026-03-31T10:00:00.124Z", "timestamp"), false],
    [cmp("greaterThan", "at", "2026-03-31T10:00:00.123Z", "timestamp"), true],
  ])("%j may match: %s", (predicate, expected) => {
    expect(may(predicate)).toBe(expected);
  });

  it("flips a literal on the left", () => {
    expect(may({ op: "lessThan", children: [literal("199", "long"), column("id", "long")] })).toBe(false);
    expect(may({ op: "lessThan", children: [literal("198", "long"), column("id", "long")] })).toBe(true);
  });

  it("combines with and, or and not, three-valued", () => {
    const out = cmp("equal", "id", "5", "long");
    const inside = cmp("equal", "id", "150", "long");
    expect(may({ op: "and", children: [inside, out] })).toBe(false);
    expect(may({ op: "or", children: [out, inside] })).toBe(true);
    expect(may({ op: "or", children: [out, out] })).toBe(false);
    // not (id >= 100): every id is >= 100, so nothing is kept.
    expect(may({ op: "not", children: [cmp("greaterThanOrEqual", "id", "100", "long")] })).toBe(false);
    expect(may({ op: "not", children: [cmp("greaterThanOrEqual", "id", "150", "long")] })).toBe(true);
  });

  it("uses null counts: isNull, not isNull, and comparisons on a column of nulls only", () => {
    const isNull = (name: string) => ({ op: "isNull", children: [column(name, "long")] });
    expect(may(isNull("id"))).toBe(false);
    expect(may(isNull("note"))).toBe(true);
    expect(may({ op: "not", children: [isNull("note")] })).toBe(true);
    expect(may({ op: "not", children: [isNull("id")] }, allNull)).toBe(false);
    expect(may(cmp("equal", "id", "1", "long"), allNull)).toBe(false);
    expect(may({ op: "not", children: [cmp("equal", "id", "1", "long")] }, allNull)).toBe(false);
  });

  it.each([
    ["an unknown op", { op: "like", children: [column("name", "string"), literal("a%", "string")] }],
    ["an unknown column", cmp("equal", "missing", "1", "long")],
    ["a double column", cmp("greaterThan", "score", "5", "double")],
    ["a value type that does not fit", cmp("equal", "id", "abc", "string")],
    ["an unparsable number", cmp("equal", "id", "1x", "long")],
    ["a timestamp finer than milliseconds", cmp("greaterThan", "at", "2026-03-31T10:00:00.1235Z", "timestamp")],
    ["two columns", { op: "equal", children: [column("id", "long"), column("price", "long")] }],
  ])("keeps the part for %s", (_case, predicate) => {
    expect(may(predicate)).toBe(true);
  });

  it("keeps every part for hints that are not JSON, and parts without statistics", () => {
    expect(partMayMatch(parsePredicate("{not json"), part, columns)).toBe(true);
    expect(partMayMatch(parsePredicate("[]"), part, columns)).toBe(true);
    expect(may(cmp("equal", "id", "5", "long"), { numRecords: 5, stats: null })).toBe(true);
  });

  it("compares decimal and integer literals exactly, never through Number()", () => {
    const wide = [
      { name: "d", type: "DECIMAL(38,20)" },
      { name: "big", type: "BIGINT" },
    ];
    // Bounds as the statistics publish them: the maximum 1.00000000000000000001 rounded up.
    const stats: PartStats = {
      numRecords: 2,
      stats: {
        minValues: { d: 1, big: 9007199254740992 },
        maxValues: { d: 1.00000000000001, big: 9007199254740992 },
        nullCount: { d: 0, big: 0 },
      },
    };
    const mayWide = (predicate: unknown) => partMayMatch(parsePredicate(JSON.stringify(predicate)), stats, wide);
    expect(mayWide(cmp("greaterThan", "d", "1", "double"))).toBe(true);
    expect(mayWide(cmp("greaterThan", "d", "1.000000000000000000005", "double"))).toBe(true);
    expect(mayWide(cmp("greaterThan", "d", "1.00000000000001", "double"))).toBe(false);
    // 1.000000000000010000001 is above the bound though Number() makes it equal to it.
    expect(mayWide(cmp("greaterThanOrEqual", "d", "1.000000000000010000001", "double"))).toBe(false);
    expect(mayWide(cmp("lessThan", "d", "1.00000000000000000000001", "double"))).toBe(true);
    expect(mayWide(cmp("lessThan", "d", "1", "double"))).toBe(false);
    // 2^53 + 1 is not 2^53, though Number() makes it so.
    expect(mayWide(cmp("equal", "big", "9007199254740993", "long"))).toBe(false);
    expect(mayWide(cmp("equal", "big", "9007199254740992", "long"))).toBe(true);
    expect(mayWide(cmp("lessThan", "big", "9007199254740993", "long"))).toBe(true);
  });

  const isNullOf = (child: unknown) => ({ op: "isNull", children: [child] });
  it.each([
    ["a null child of a comparison", { op: "equal", children: [null, literal("1", "long")] }],
    ["a null literal", { op: "equal", children: [column("id", "long"), null] }],
    ["a null child of isNull", isNullOf(null)],
    ["a null child of not", { op: "not", children: [null] }],
    ["a null child of and", { op: "and", children: [cmp("equal", "id", "5", "long"), null] }],
    ["a null child of or", { op: "or", children: [null, cmp("equal", "id", "5", "long")] }],
    ["a number as a child", { op: "lessThan", children: [1, 2] }],
    ["a string as a child", { op: "equal", children: ["id", "5"] }],
    ["a list as a child", { op: "equal", children: [[column("id", "long")], literal("5", "long")] }],
    ["children not a list", { op: "and", children: { a: 1 } }],
    ["children null", { op: "equal", children: null }],
    ["no children", { op: "equal" }],
    [
      "too many children",
      { op: "equal", children: [column("id", "long"), literal("5", "long"), literal("6", "long")] },
    ],
    [
      "a literal without a value",
      { op: "equal", children: [column("id", "long"), { op: "literal", valueType: "long" }] },
    ],
    [
      "a literal's value a number",
      { op: "equal", children: [column("id", "long"), { op: "literal", value: 5, valueType: "long" }] },
    ],
    ["a column's name a number", { op: "equal", children: [{ op: "column", name: 5 }, literal("5", "long")] }],
    ["an op not text", { op: ["equal"], children: [column("id", "long"), literal("5", "long")] }],
    ["an empty object", {}],
    ["a literal's value out of range", cmp("equal", "id", "1e99999", "long")],
    [
      "a nesting deeper than allowed",
      Array.from({ length: 100 }).reduce<object>(
        (inner) => ({ op: "not", children: [inner] }),
        cmp("equal", "id", "5", "long"),
      ),
    ],
  ])("keeps the part, without an error, for %s", (_case, predicate) => {
    expect(may(predicate)).toBe(true);
  });

  it.each([["null"], ['"text"'], ["42"], ["[]"], ["{"], [""]])("ignores the hint %s (not an object)", (text) => {
    expect(partMayMatch(parsePredicate(text), part, columns)).toBe(true);
  });

  it("ignores hints that are not text", () => {
    for (const hint of [null, 5, { op: "equal" }, ["x"]]) expect(parsePredicate(hint)).toBeNull();
  });

  it("counts a hint as present whatever its shape, so limitHint never drops parts the client filters", () => {
    expect(hasPredicateHints({})).toBe(false);
    expect(hasPredicateHints({ jsonPredicateHints: "", predicateHints: [] })).toBe(false);
    expect(hasPredicateHints({ jsonPredicateHints: "{not json" })).toBe(true);
    expect(hasPredicateHints({ jsonPredicateHints: { op: "equal" } })).toBe(true);
    expect(hasPredicateHints({ predicateHints: "id = 5" })).toBe(true);
    expect(hasPredicateHints({ predicateHints: ["id = 5"] })).toBe(true);
  });
});
