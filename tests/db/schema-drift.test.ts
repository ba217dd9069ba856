import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { getDMMF, type GetDMMFError } from "@prisma/get-dmmf";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMigratedDatabase, type TestDatabase } from "../helpers/database";

/**
 * The database the migrations produce must be exactly what prisma/schema.prisma describes.
 * Both sides are reduced to the same plain, sorted description: the expected one from Prisma's
 * own datamodel (DMMF, parsed from the schema file at run time), the actual one from the
 * PostgreSQL catalog of a freshly migrated database.
 */

type Document = Exclude<ReturnType<typeof getDMMF>, GetDMMFError>;
type Datamodel = Document["datamodel"];
type Model = Datamodel["models"][number];
type Field = Model["fields"][number];

type SchemaDescription = {
  tables: string[];
  /** table → column → "<type> NOT NULL" | "<type> NULL" */
  columns: Record<string, Record<string, string>>;
  /** table → "<name>: PRIMARY KEY|UNIQUE|INDEX [USING <method>] (<col> [DESC], …)" */
  indexes: Record<string, string[]>;
  /** table → "<name>: (<cols>) REFERENCES <table> (<cols>) ON DELETE … ON UPDATE …" */
  foreignKeys: Record<string, string[]>;
  /** enum type → its values */
  enums: Record<string, string[]>;
};

const SCHEMA_PATH = fileURLToPath(new URL("../../prisma/schema.prisma", import.meta.url));
/** Bookkeeping table of the migration runner, not part of the data model. */
const MIGRATIONS_TABLE = "_prisma_migrations";
/** PostgreSQL's NAMEDATALEN - 1; Prisma truncates default constraint names to fit it. */
const MAX_IDENTIFIER_LENGTH = 63;

// ---------------------------------------------------------------------------------------
// Expected: from schema.prisma via Prisma's DMMF.

function loadDatamodel(schemaText: string): Datamodel {
  const result = getDMMF({ datamodel: schemaText });
  if ("error" in result) {
    // The wasm error message is JSON holding Prisma's (ANSI-coloured) validation report.
    let message = result.error.message;
    try {
      message = (JSON.parse(message) as { message?: string }).message ?? message;
    } catch {
      // not JSON: keep as is
    }
    throw new Error(`getDMMF failed ${result.reason}:\n${message.replace(/\u001b\[[0-9;]*m/g, "")}`);
  }
  return result.datamodel;
}

/** Prisma's default constraint/index name (psl ConstraintNames): truncate the prefix, keep the suffix. */
function defaultName(table: string, columns: readonly string[], suffix: string): string {
  const prefix = columns.length === 0 ? table : `${table}_${columns.join("_")}`;
  return prefix.slice(0, MAX_IDENTIFIER_LENGTH - suffix.length) + suffix;
}

/** The type format_type() reports for a Prisma native type (`@db.X(args)`), given "(args)" or "". */
const NATIVE_TYPES: Record<string, (params: string) => string> = {
  Text: () => "text",
  Char: (p) => `character${p}`,
  VarChar: (p) => `character varying${p}`,
  Uuid: () => "uuid",
  Xml: () => "xml",
  Inet: () => "inet",
  Citext: () => "citext",
  Bit: (p) => `bit${p}`,
  VarBit: (p) => `bit varying${p}`,
  SmallInt: () => "smallint",
  Integer: () => "integer",
  BigInt: () => "bigint",
  Oid: () => "oid",
  Real: () => "real",
  DoublePrecision: () => "double precision",
  Decimal: (p) => `numeric${p}`,
  Money: () => "money",
  Boolean: () => "boolean",
  Date: () => "date",
  Timestamp: (p) => `timestamp${p} without time zone`,
  Timestamptz: (p) => `timestamp${p} with time zone`,
  Time: (p) => `time${p} without time zone`,
  Timetz: (p) => `time${p} with time zone`,
  Json: () => "json",
  JsonB: () => "jsonb",
  ByteA: () => "bytea",
};

function nativeTypeSql(name: string, args: readonly string[]): string {
  const render = NATIVE_TYPES[name];
  if (!render)
    throw new Error(`schema-drift test: no PostgreSQL type mapping for @db.${name}; add it to NATIVE_TYPES.`);
  return render(args.length > 0 ? `(${args.join(",")})` : "");
}

/** Prisma's PostgreSQL type for a scalar without `@db.*`. */
const SCALAR_TYPES: Record<string, string> = {
  String: "text",
  Int: "integer",
  BigInt: "bigint",
  Float: "double precision",
  Decimal: "numeric(65,30)",
  Boolean: "boolean",
  DateTime: "timestamp(3) without time zone",
  Json: "jsonb",
  Bytes: "bytea",
};

const REFERENTIAL_ACTIONS: Record<string, string> = {
  Cascade: "CASCADE",
  Restrict: "RESTRICT",
  NoAction: "NO ACTION",
  SetNull: "SET NULL",
  SetDefault: "SET DEFAULT",
};

function referentialAction(action: string): string {
  const sql = REFERENTIAL_ACTIONS[action];
  if (!sql) throw new Error(`schema-drift test: unknown referential action ${action}`);
  return sql;
}

function describeSchema(schemaText: string): SchemaDescription {
  // DMMF does not expose @relation(map: …), so a custom foreign-key name could not be checked.
  if (/@relation\([^)]*\bmap\s*:/.test(schemaText)) {
    throw new Error("schema-drift test: @relation(map: …) is not exposed by DMMF; extend this test before using it.");
  }
  const datamodel = loadDatamodel(schemaText);
  const models = new Map(datamodel.models.map((model) => [model.name, model]));
  const enumDbNames = new Map(datamodel.enums.map((e) => [e.name, e.dbName ?? e.name]));
  const modelNamed = (name: string): Model => {
    const model = models.get(name);
    if (!model) throw new Error(`schema-drift test: unknown model ${name}`);
    return model;
  };
  const tableOf = (model: Model) => model.dbName ?? model.name;
  const columnOf = (model: Model, fieldName: string): string => {
    const field = model.fields.find((f) => f.name === fieldName);
    if (!field) throw new Error(`schema-drift test: ${model.name} has no field ${fieldName}`);
    return field.dbName ?? field.name;
  };

  const columnType = (model: Model, field: Field): string => {
    let type: string | undefined;
    if (field.kind === "enum") type = enumDbNames.get(field.type);
    else if (field.kind === "scalar") {
      type = field.nativeType ? nativeTypeSql(field.nativeType[0], field.nativeType[1]) : SCALAR_TYPES[field.type];
    }
    if (!type)
      throw new Error(
        `schema-drift test: no PostgreSQL type for ${model.name}.${field.name} (${field.kind} ${field.type})`,
      );
    return field.isList ? `${type}[]` : type;
  };

  const description: SchemaDescription = { tables: [], columns: {}, indexes: {}, foreignKeys: {}, enums: {} };
  for (const model of datamodel.models) {
    const table = tableOf(model);
    description.tables.push(table);
    const columns: Record<string, string> = {};
    description.columns[table] = columns;
    for (const field of model.fields) {
      if (field.kind !== "object") {
        columns[field.dbName ?? field.name] = `${columnType(model, field)} ${field.isRequired ? "NOT NULL" : "NULL"}`;
        continue;
      }
      const from = field.relationFromFields ?? [];
      if (from.length === 0) {
        // The back side of a relation has no columns, unless it is an implicit m-n relation (a join table).
        const other = modelNamed(field.type).fields.find((f) => f.relationName === field.relationName && f !== field);
        if (field.isList && other?.isList) {
          throw new Error(
            `schema-drift test: implicit many-to-many relation ${field.relationName} is not modelled; extend this test.`,
          );
        }
        continue;
      }
      const target = modelNamed(field.type);
      const fromColumns = from.map((name) => columnOf(model, name));
      const toColumns = (field.relationToFields ?? []).map((name) => columnOf(target, name));
      // Prisma's defaults: Restrict for a required relation, SetNull for an optional one; Cascade on update.
      const onDelete = field.relationOnDelete ?? (field.isRequired ? "Restrict" : "SetNull");
      const onUpdate = field.relationOnUpdate ?? "Cascade";
      (description.foreignKeys[table] ??= []).push(
        `${defaultName(table, fromColumns, "_fkey")}: (${fromColumns.join(", ")}) REFERENCES ${tableOf(target)} (${toColumns.join(", ")})` +
          ` ON DELETE ${referentialAction(onDelete)} ON UPDATE ${referentialAction(onUpdate)}`,
      );
    }
  }

  for (const index of datamodel.indexes) {
    const model = modelNamed(index.model);
    const table = tableOf(model);
    const columns = index.fields.map((f) => {
      if (f.operatorClass !== undefined || f.length !== undefined) {
        throw new Error(
          `schema-drift test: index options (ops/length) on ${model.name}.${f.name} are not compared; extend this test.`,
        );
      }
      return columnOf(model, f.name) + (f.sortOrder === "desc" ? " DESC" : "");
    });
    const plainColumns = index.fields.map((f) => columnOf(model, f.name));
    let kind: string;
    let name: string;
    if (index.type === "id") [kind, name] = ["PRIMARY KEY", index.dbName ?? defaultName(table, [], "_pkey")];
    else if (index.type === "unique")
      [kind, name] = ["UNIQUE", index.dbName ?? defaultName(table, plainColumns, "_key")];
    else if (index.type === "normal")
      [kind, name] = ["INDEX", index.dbName ?? defaultName(table, plainColumns, "_idx")];
    else throw new Error(`schema-drift test: index type ${index.type} on ${model.name} is not supported on PostgreSQL`);
    const method = (index.algorithm ?? "BTree").toLowerCase();
    (description.indexes[table] ??= []).push(indexLine(name, kind, method, columns));
  }

  for (const e of datamodel.enums) description.enums[e.dbName ?? e.name] = e.values.map((v) => v.dbName ?? v.name);
  return normalise(description);
}

function indexLine(name: string, kind: string, method: string, columns: readonly string[]): string {
  return `${name}: ${kind}${method === "btree" ? "" : ` USING ${method}`} (${columns.join(", ")})`;
}

/** Sorted lists, so that declaration order (and enum value order, which ADD VALUE cannot control) never matters. */
function normalise(description: SchemaDescription): SchemaDescription {
  const sortValues = (record: Record<string, string[]>) =>
    Object.fromEntries(Object.entries(record).map(([key, values]) => [key, [...values].sort()]));
  return {
    tables: [...description.tables].sort(),
    columns: description.columns,
    indexes: sortValues(description.indexes),
    foreignKeys: sortValues(description.foreignKeys),
    enums: sortValues(description.enums),
  };
}

// ---------------------------------------------------------------------------------------
// Actual: from the PostgreSQL catalog of the migrated database.

const FK_ACTIONS: Record<string, string> = {
  a: "NO ACTION",
  r: "RESTRICT",
  c: "CASCADE",
  n: "SET NULL",
  d: "SET DEFAULT",
};

async function describeDatabase(client: pg.Client): Promise<SchemaDescription> {
  const description: SchemaDescription = { tables: [], columns: {}, indexes: {}, foreignKeys: {}, enums: {} };

  const tables = await client.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> $1`,
    [MIGRATIONS_TABLE],
  );
  for (const { table } of tables.rows) {
    description.tables.push(table);
    description.columns[table] = {};
  }

  const columns = await client.query<{ table: string; column: string; type: string; not_null: boolean }>(
    `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> $1
        AND a.attnum > 0 AND NOT a.attisdropped`,
    [MIGRATIONS_TABLE],
  );
  for (const row of columns.rows) {
    (description.columns[row.table] ??= {})[row.column] = `${row.type} ${row.not_null ? "NOT NULL" : "NULL"}`;
  }

  // Key columns in index order; expression columns by their text; bit 0 of indoption is DESC.
  // A partial index gets its predicate appended, so it can never match a Prisma index.
  const indexes = await client.query<{
    table: string;
    name: string;
    primary: boolean;
    unique: boolean;
    method: string;
    columns: string[];
    predicate: string | null;
  }>(
    `SELECT t.relname AS table, i.relname AS name, ix.indisprimary AS primary, ix.indisunique AS unique,
            am.amname AS method, pg_get_expr(ix.indpred, ix.indrelid) AS predicate,
            ARRAY(
              SELECT CASE WHEN k.attnum = 0 THEN pg_get_indexdef(ix.indexrelid, k.ord::int, true) ELSE a.attname::text END
                     || CASE WHEN (ix.indoption[(k.ord - 1)::int] & 1) = 1 THEN ' DESC' ELSE '' END
                FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
                LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum
               ORDER BY k.ord
            ) AS columns
       FROM pg_index ix
       JOIN pg_class i ON i.oid = ix.indexrelid
       JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
       JOIN pg_am am ON am.oid = i.relam
      WHERE n.nspname = current_schema() AND t.relname <> $1`,
    [MIGRATIONS_TABLE],
  );
  for (const row of indexes.rows) {
    const kind = row.primary ? "PRIMARY KEY" : row.unique ? "UNIQUE" : "INDEX";
    const line = indexLine(row.name, kind, row.method, row.columns) + (row.predicate ? ` WHERE ${row.predicate}` : "");
    (description.indexes[row.table] ??= []).push(line);
  }

  const foreignKeys = await client.query<{
    table: string;
    name: string;
    columns: string[];
    referenced_table: string;
    referenced_columns: string[];
    on_delete: string;
    on_update: string;
  }>(
    `SELECT t.relname AS table, c.conname AS name, rt.relname AS referenced_table,
            ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.ord) AS columns,
            ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.ord) AS referenced_columns,
            c.confdeltype::text AS on_delete, c.confupdtype::text AS on_update
       FROM pg_constraint c
       JOIN pg_class t ON t.oid = c.conrelid
       JOIN pg_class rt ON rt.oid = c.confrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE c.contype = 'f' AND n.nspname = current_schema()`,
  );
  for (const row of foreignKeys.rows) {
    (description.foreignKeys[row.table] ??= []).push(
      `${row.name}: (${row.columns.join(", ")}) REFERENCES ${row.referenced_table} (${row.referenced_columns.join(", ")})` +
        ` ON DELETE ${FK_ACTIONS[row.on_delete] ?? row.on_delete} ON UPDATE ${FK_ACTIONS[row.on_update] ?? row.on_update}`,
    );
  }

  const enums = await client.query<{ name: string; values: string[] }>(
    `SELECT t.typname AS name, ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) AS values
       FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE t.typtype = 'e' AND n.nspname = current_schema()`,
  );
  for (const row of enums.rows) description.enums[row.name] = row.values;

  return normalise(description);
}

// ---------------------------------------------------------------------------------------

const aspects = ["tables", "columns", "indexes", "foreignKeys", "enums"] as const;

describe("schema drift: migrations vs prisma/schema.prisma", () => {
  let database: TestDatabase | undefined;
  let actual: SchemaDescription;
  const schemaText = readFileSync(SCHEMA_PATH, "utf8");

  beforeAll(async () => {
    database = await createMigratedDatabase("schema_drift");
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      actual = await describeDatabase(client);
    } finally {
      await client.end();
    }
  });

  afterAll(async () => {
    await database?.drop();
  });

  it.each(aspects)("%s match schema.prisma", (aspect) => {
    expect(
      actual[aspect],
      `${aspect} differ. "- Expected" is prisma/schema.prisma, "+ Received" is the migrated database. ` +
        `If schema.prisma changed, add a migration: npm run db:migration -- --name <what_changed>`,
    ).toEqual(describeSchema(schemaText)[aspect]);
  });

  it("fails when schema.prisma gains a field that no migration adds", () => {
    // Proves the comparison above is not vacuous: a field added in memory must show up as drift.
    const model = /^model (\w+) \{$/m.exec(schemaText)?.[1];
    if (!model) throw new Error("no model found in schema.prisma");
    const probed = schemaText.replace(`model ${model} {\n`, `model ${model} {\n  driftProbe String\n`);
    const expected = describeSchema(probed);
    const table = loadDatamodel(probed).models.find((m) => m.name === model)?.dbName ?? model;
    expect(expected.columns[table]).toHaveProperty("driftProbe", "text NOT NULL");
    expect(actual.columns).not.toEqual(expected.columns);
    expect(actual).not.toEqual(expected);
  });
});
