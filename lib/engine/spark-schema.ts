import type { Column } from "./columns";

/**
 * DuckDB column types as Delta Sharing's schema (the protocol's subset of Spark SQL's JSON schema),
 * and the casts that make a Parquet rendition hold exactly that schema. Spark has no unsigned,
 * 128-bit, nanosecond, time-of-day, interval, UUID, enum or union types: such columns are written
 * as the nearest type it reads without loss (UBIGINT as DECIMAL(20,0), HUGEINT as DECIMAL(38,0),
 * TIMESTAMP_NS as TIMESTAMP) or as text (TIME, INTERVAL, UUID, ENUM, UNION, JSON, BIT, ...), so
 * pandas, Spark and Power BI all read the file with the schema the server advertises.
 */

export type SparkType =
  | string
  | { type: "struct"; fields: SparkField[] }
  | { type: "array"; elementType: SparkType; containsNull: boolean }
  | { type: "map"; keyType: SparkType; valueType: SparkType; valueContainsNull: boolean };

export type SparkField = { name: string; type: SparkType; nullable: boolean; metadata: Record<string, string> };

/** A parsed DuckDB type, with the portable DuckDB type it is written as. */
type DuckType =
  | { kind: "primitive"; name: string; args: string }
  | { kind: "struct"; fields: { name: string; type: DuckType }[] }
  | { kind: "list"; element: DuckType }
  | { kind: "map"; key: DuckType; value: DuckType };

const SPARK_PRIMITIVES: Record<string, string> = {
  BOOLEAN: "boolean",
  TINYINT: "byte",
  SMALLINT: "short",
  INTEGER: "integer",
  BIGINT: "long",
  FLOAT: "float",
  DOUBLE: "double",
  VARCHAR: "string",
  BLOB: "binary",
  DATE: "date",
  TIMESTAMP: "timestamp",
  "TIMESTAMP WITH TIME ZONE": "timestamp",
};

/** DuckDB types Spark lacks, written as the nearest one it reads without loss. */
const WIDENED: Record<string, string> = {
  UTINYINT: "SMALLINT",
  USMALLINT: "INTEGER",
  UINTEGER: "BIGINT",
  UBIGINT: "DECIMAL(20,0)",
  HUGEINT: "DECIMAL(38,0)",
  TIMESTAMP_S: "TIMESTAMP",
  TIMESTAMP_MS: "TIMESTAMP",
  TIMESTAMP_NS: "TIMESTAMP",
};

/**
 * The table's schema as the protocol's `schemaString` value (a JSON text); a column with a description
 * carries it as its field's `metadata.comment` (Spark's and Unity Catalog's column comment).
 */
export function sparkSchemaString(columns: Column[], comments: Record<string, string> = {}): string {
  const fields: SparkField[] = columns.map((column) => ({
    name: column.name,
    type: sparkType(portable(parseDuckType(column.type))),
    nullable: column.nullable,
    metadata: commentOf(comments, column.name),
  }));
  return JSON.stringify({ type: "struct", fields });
}

function commentOf(comments: Record<string, string>, name: string): Record<string, string> {
  const comment = comments[name];
  return comment ? { comment } : {};
}

/** The Spark type a DuckDB type is advertised (and written) as. */
export function sparkTypeOf(duckType: string): SparkType {
  return sparkType(portable(parseDuckType(duckType)));
}

/**
 * The SELECT list that writes `columns` with the types sparkSchemaString advertises: a column whose
 * type Spark reads as it is is selected as it is, any other is cast to its portable type.
 */
export function portableSelectList(columns: Column[]): string {
  return columns
    .map((column) => {
      const parsed = parseDuckType(column.type);
      const target = duckTypeText(portable(parsed));
      const name = quoteIdentifier(column.name);
      return target === duckTypeText(parsed) ? name : `CAST(${name} AS ${target}) AS ${name}`;
    })
    .join(", ");
}

/**
 * The `* REPLACE (...)` list that reads a Parquet rendition's columns in the table's own types:
 * each column portableSelectList widened is cast back (UBIGINT from DECIMAL(20,0), TIME and UUID
 * from text); undefined when every column is stored in its own type, so such a read has no cast.
 * A UNION stays text: its text is the value alone, which does not say which member it was.
 */
export function ownTypeReplacements(columns: { name: string; type: string }[]): string | undefined {
  const casts = columns.flatMap((column) => {
    const parsed = parseDuckType(column.type);
    const own = duckTypeText(parsed);
    if (duckTypeText(portable(parsed)) === own || holdsUnion(parsed)) return [];
    const name = quoteIdentifier(column.name);
    return [`CAST(${name} AS ${own}) AS ${name}`];
  });
  return casts.length > 0 ? casts.join(", ") : undefined;
}

function holdsUnion(type: DuckType): boolean {
  switch (type.kind) {
    case "struct":
      return type.fields.some((field) => holdsUnion(field.type));
    case "list":
      return holdsUnion(type.element);
    case "map":
      return holdsUnion(type.key) || holdsUnion(type.value);
    case "primitive":
      return type.name === "UNION";
  }
}

export const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

function portable(type: DuckType): DuckType {
  switch (type.kind) {
    case "struct":
      return { kind: "struct", fields: type.fields.map((field) => ({ name: field.name, type: portable(field.type) })) };
    case "list":
      return { kind: "list", element: portable(type.element) };
    case "map":
      return { kind: "map", key: portable(type.key), value: portable(type.value) };
    case "primitive": {
      if (type.name === "DECIMAL") return type;
      if (SPARK_PRIMITIVES[type.name] && !type.args) return type;
      const widened = WIDENED[type.name];
      if (widened) return parseDuckType(widened);
      return { kind: "primitive", name: "VARCHAR", args: "" };
    }
  }
}

function sparkType(type: DuckType): SparkType {
  switch (type.kind) {
    case "struct":
      return {
        type: "struct",
        fields: type.fields.map((field) => ({
          name: field.name,
          type: sparkType(field.type),
          nullable: true,
          metadata: {},
        })),
      };
    case "list":
      return { type: "array", elementType: sparkType(type.element), containsNull: true };
    case "map":
      return { type: "map", keyType: sparkType(type.key), valueType: sparkType(type.value), valueContainsNull: true };
    case "primitive":
      if (type.name === "DECIMAL") {
        const [precision = "18", scale = "3"] = type.args.split(",").map((part) => part.trim());
        return `decimal(${precision},${scale})`;
      }
      return SPARK_PRIMITIVES[type.name] ?? "string";
  }
}

function duckTypeText(type: DuckType): string {
  switch (type.kind) {
    case "struct":
      return `STRUCT(${type.fields.map((field) => `${quoteIdentifier(field.name)} ${duckTypeText(field.type)}`).join(", ")})`;
    case "list":
      return `${duckTypeText(type.element)}[]`;
    case "map":
      return `MAP(${duckTypeText(type.key)}, ${duckTypeText(type.value)})`;
    case "primitive":
      return type.args ? `${type.name}(${type.args})` : type.name;
  }
}

/**
 * Parses a type as DuckDB prints it (DESCRIBE): `BIGINT`, `DECIMAL(18,3)`, `VARCHAR[]`,
 * `INTEGER[3]`, `STRUCT(a INTEGER, "b c" VARCHAR[])`, `MAP(VARCHAR, BIGINT)`,
 * `TIMESTAMP WITH TIME ZONE`, `ENUM('a', 'b')`. A fixed-size array is read as a list.
 */
export function parseDuckType(text: string): DuckType {
  const parser = new TypeParser(text);
  const type = parser.type();
  parser.end();
  return type;
}

class TypeParser {
  private position = 0;

  constructor(private readonly text: string) {}

  type(): DuckType {
    const name = this.word().toUpperCase();
    if (!name) this.fail("a type name");
    let type: DuckType;
    if (this.peek() === "(") {
      this.position++;
      if (name === "STRUCT") type = { kind: "struct", fields: this.fields() };
      else if (name === "MAP") {
        const key = this.type();
        this.expect(",");
        const value = this.type();
        this.expect(")");
        type = { kind: "map", key, value };
      } else type = { kind: "primitive", name, args: this.rawUntilClose() };
    } else type = { kind: "primitive", name, args: "" };
    for (;;) {
      this.skipSpaces();
      if (this.peek() !== "[") return type;
      const close = this.text.indexOf("]", this.position);
      if (close < 0 || !/^\[\d*\]$/.test(this.text.slice(this.position, close + 1))) this.fail("[] or [N]");
      this.position = close + 1;
      type = { kind: "list", element: type };
    }
  }

  end(): void {
    this.skipSpaces();
    if (this.position !== this.text.length) this.fail("the end of the type");
  }

  /** `name type, name type)` of a STRUCT. */
  private fields(): { name: string; type: DuckType }[] {
    const fields: { name: string; type: DuckType }[] = [];
    for (;;) {
      this.skipSpaces();
      const name = this.peek() === '"' ? this.quoted() : this.identifier();
      fields.push({ name, type: this.type() });
      this.skipSpaces();
      const next = this.text[this.position++];
      if (next === ")") return fields;
      if (next !== ",") this.fail(", or )");
    }
  }

  /** A (possibly several-word) type name: `TIMESTAMP WITH TIME ZONE`. */
  private word(): string {
    this.skipSpaces();
    const match = /^[A-Za-z_][A-Za-z0-9_]*(?: +[A-Za-z_][A-Za-z0-9_]*)*/.exec(this.text.slice(this.position));
    this.position += match?.[0].length ?? 0;
    return match?.[0] ?? "";
  }

  private identifier(): string {
    const match = /^[^\s"(),[\]]+/.exec(this.text.slice(this.position));
    if (!match) this.fail("a field name");
    this.position += match[0].length;
    return match[0];
  }

  private quoted(): string {
    let name = "";
    this.position++; // the opening quote
    for (;;) {
      const char = this.text[this.position++];
      if (char === undefined) this.fail('a closing "');
      if (char === '"') {
        if (this.text[this.position] !== '"') return name;
        this.position++;
      }
      name += char;
    }
  }

  /** The arguments of DECIMAL(18,3), ENUM('a', 'b'), UNION(...): kept as text, up to the matching `)`. */
  private rawUntilClose(): string {
    const start = this.position;
    let depth = 1;
    let quote: string | undefined;
    while (this.position < this.text.length) {
      const char = this.text[this.position++]!;
      if (quote) {
        if (char === quote) quote = undefined;
      } else if (char === "'" || char === '"') quote = char;
      else if (char === "(") depth++;
      else if (char === ")" && --depth === 0) return this.text.slice(start, this.position - 1).trim();
    }
    return this.fail(")");
  }

  private expect(char: string): void {
    this.skipSpaces();
    if (this.text[this.position++] !== char) this.fail(char);
  }

  private peek(): string | undefined {
    this.skipSpaces();
    return this.text[this.position];
  }

  private skipSpaces(): void {
    while (this.text[this.position] === " ") this.position++;
  }

  private fail(expected: string): never {
    throw new Error(
      `Cannot read the DuckDB type ${JSON.stringify(this.text)}: expected ${expected} at ${this.position}.`,
    );
  }
}
