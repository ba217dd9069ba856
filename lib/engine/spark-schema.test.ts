import { describe, expect, it } from "vitest";
import { ownTypeReplacements, parseDuckType, portableSelectList, sparkSchemaString, sparkTypeOf } from "./spark-schema";

describe("sparkTypeOf", () => {
  it.each([
    ["BOOLEAN", "boolean"],
    ["TINYINT", "byte"],
    ["SMALLINT", "short"],
    ["INTEGER", "integer"],
    ["BIGINT", "long"],
    ["FLOAT", "float"],
    ["DOUBLE", "double"],
    ["VARCHAR", "string"],
    ["BLOB", "binary"],
    ["DATE", "date"],
    ["TIMESTAMP", "timestamp"],
    ["TIMESTAMP WITH TIME ZONE", "timestamp"],
    ["DECIMAL(18,3)", "decimal(18,3)"],
    ["DECIMAL(38, 10)", "decimal(38,10)"],
    // Widened: Spark has no unsigned, 128-bit or sub-microsecond types.
    ["UTINYINT", "short"],
    ["USMALLINT", "integer"],
    ["UINTEGER", "long"],
    ["UBIGINT", "decimal(20,0)"],
    ["HUGEINT", "decimal(38,0)"],
    ["TIMESTAMP_NS", "timestamp"],
    ["TIMESTAMP_MS", "timestamp"],
    ["TIMESTAMP_S", "timestamp"],
    // Anything else Spark lacks is text.
    ["TIME", "string"],
    ["INTERVAL", "string"],
    ["UUID", "string"],
    ["JSON", "string"],
    ["ENUM('a', 'b)c')", "string"],
    ["BIT", "string"],
  ])("%s -> %s", (duckType, spark) => {
    expect(sparkTypeOf(duckType)).toBe(spark);
  });

  it("maps nested types recursively, widening inside them", () => {
    expect(sparkTypeOf('STRUCT(a UBIGINT, "b c" VARCHAR[], m MAP(VARCHAR, TIME))')).toEqual({
      type: "struct",
      fields: [
        { name: "a", type: "decimal(20,0)", nullable: true, metadata: {} },
        {
          name: "b c",
          type: { type: "array", elementType: "string", containsNull: true },
          nullable: true,
          metadata: {},
        },
        {
          name: "m",
          type: { type: "map", keyType: "string", valueType: "string", valueContainsNull: true },
          nullable: true,
          metadata: {},
        },
      ],
    });
    expect(sparkTypeOf("INTEGER[3][]")).toEqual({
      type: "array",
      elementType: { type: "array", elementType: "integer", containsNull: true },
      containsNull: true,
    });
  });
});

describe("parseDuckType", () => {
  it.each(["", "STRUCT(a INTEGER", "INTEGER[x]", "MAP(VARCHAR)", "INTEGER junk(", 'STRUCT("a INTEGER)'])(
    "refuses %j",
    (text) => {
      expect(() => parseDuckType(text)).toThrow();
    },
  );

  it("reads quoted field names with doubled quotes", () => {
    expect(parseDuckType('STRUCT("say ""hi""" VARCHAR)')).toEqual({
      kind: "struct",
      fields: [{ name: 'say "hi"', type: { kind: "primitive", name: "VARCHAR", args: "" } }],
    });
  });
});

describe("sparkSchemaString", () => {
  it("is the protocol's struct of fields, with each column's nullability", () => {
    const schema = JSON.parse(
      sparkSchemaString([
        { name: "id", type: "BIGINT", nullable: false },
        { name: "price", type: "DECIMAL(10,2)", nullable: true },
      ]),
    );
    expect(schema).toEqual({
      type: "struct",
      fields: [
        { name: "id", type: "long", nullable: false, metadata: {} },
        { name: "price", type: "decimal(10,2)", nullable: true, metadata: {} },
      ],
    });
  });
});

describe("portableSelectList", () => {
  it("selects portable columns as they are and casts the others to what is advertised", () => {
    expect(
      portableSelectList([
        { name: "id", type: "BIGINT", nullable: false },
        { name: 'odd "name"', type: "UBIGINT", nullable: true },
        { name: "at", type: "TIME", nullable: true },
        { name: "tags", type: "STRUCT(n HUGEINT)[]", nullable: true },
      ]),
    ).toBe(
      [
        '"id"',
        'CAST("odd ""name""" AS DECIMAL(20,0)) AS "odd ""name"""',
        'CAST("at" AS VARCHAR) AS "at"',
        'CAST("tags" AS STRUCT("n" DECIMAL(38,0))[]) AS "tags"',
      ].join(", "),
    );
  });
});

describe("ownTypeReplacements", () => {
  it("casts back only the columns a rendition stores widened, a UNION left as its text", () => {
    expect(
      ownTypeReplacements([
        { name: "id", type: "BIGINT" },
        { name: 'odd "name"', type: "UBIGINT" },
        { name: "at", type: "TIME" },
        { name: "tags", type: 'STRUCT(n HUGEINT, "b c" VARCHAR)[]' },
        { name: "either", type: "UNION(n INTEGER, s VARCHAR)" },
        { name: "price", type: "DECIMAL(18,3)" },
      ]),
    ).toBe(
      'CAST("odd ""name""" AS UBIGINT) AS "odd ""name""", CAST("at" AS TIME) AS "at", ' +
        'CAST("tags" AS STRUCT("n" HUGEINT, "b c" VARCHAR)[]) AS "tags"',
    );
  });

  it("is nothing when every column is stored in its own type (no cast in the scan's way)", () => {
    expect(
      ownTypeReplacements([
        { name: "id", type: "BIGINT" },
        { name: "name", type: "VARCHAR" },
        { name: "at", type: "TIMESTAMP WITH TIME ZONE" },
      ]),
    ).toBeUndefined();
  });
});
