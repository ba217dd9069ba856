import { z } from "zod";
import { db } from "../db/client";
import { AppError } from "../errors";
import { findOrderForOperator } from "../orders/files";
import { CADENCE_MAX_SECONDS, CADENCE_MIN_SECONDS, durationWords, isoDuration, parseDuration } from "./durations";

/**
 * What a table promises (docs/tables.md, "What a table promises"), set by the operator: the data dictionary (`table:describe`:
 * the table's description, each column's description, unit and example) and the refresh cadence
 * (`table:cadence`). Both are the table's, not a version's: every version shows the current ones, and
 * a column new in a version has no description until described. Every refusal is an
 * invalid_argument with a sentence (or table_not_found), and nothing is changed by a refused call.
 */

export const DESCRIPTION_MAX = 2000;
export const UNIT_MAX = 100;
export const EXAMPLE_MAX = 2000;

/** One column's entry in the dictionary; a null field has not been described. */
export type ColumnDoc = { description: string | null; unit: string | null; example: string | null };
const COLUMN_FIELDS = ["description", "unit", "example"] as const;

/** Any control character but a newline (a description may have paragraphs; CR LF is taken as a newline). */
const CONTROL_BUT_NEWLINE = /(?!\n)\p{Cc}/u;

/** A dictionary text: trimmed; empty clears it (null); too long or with control characters refused. */
function docText(what: string, max: number, lineBreaks: boolean) {
  return z
    .union([z.string(), z.number(), z.boolean()], { error: `${what} is text.` })
    .nullable()
    .transform((value, context) => {
      if (value === null) return null;
      const text = String(value).replace(/\r\n/g, "\n").trim();
      const control = lineBreaks ? CONTROL_BUT_NEWLINE.test(text) : /\p{Cc}/u.test(text);
      const problem =
        text.length > max
          ? `${what} has ${text.length.toLocaleString("en-US")} characters; at most ${max.toLocaleString("en-US")} are allowed.`
          : control
            ? `${what} contains control characters${lineBreaks ? " (only line breaks are allowed)" : ""}.`
            : null;
      if (problem) {
        context.addIssue({ code: "custom", message: problem });
        return z.NEVER;
      }
      return text || null;
    });
}

const columnDocSchema = (column: string) =>
  z.strictObject({
    description: docText(`The description of column ${column}`, DESCRIPTION_MAX, true).optional(),
    unit: docText(`The unit of column ${column}`, UNIT_MAX, false).optional(),
    example: docText(`The example of column ${column}`, EXAMPLE_MAX, false).optional(),
  });

/** What one `table:describe` call changes: only the fields it names. */
export type DictionaryChange = {
  description?: string | null;
  columns: { name: string; description?: string | null; unit?: string | null; example?: string | null }[];
};

/**
 * Reads a dictionary file's object (`{"description": T, "columns": {"NAME": {"description": T, "unit": U,
 * "example": V}}}`, parsed from JSON or YAML by the caller): an unknown field is refused, naming it.
 */
export function dictionaryFromFile(content: unknown): DictionaryChange {
  if (typeof content !== "object" || content === null || Array.isArray(content)) {
    throw invalid('The file must hold one object: {"description": ..., "columns": {"NAME": {...}}}.');
  }
  const { description, columns, ...unknown } = content as Record<string, unknown>;
  const extra = Object.keys(unknown)[0];
  if (extra !== undefined)
    throw invalid(`The file has an unknown field ${JSON.stringify(extra)}: known are description and columns.`);
  const change: DictionaryChange = { columns: [] };
  if (description !== undefined)
    change.description = checked(docText("The table's description", DESCRIPTION_MAX, true), description);
  if (columns === undefined) return change;
  if (typeof columns !== "object" || columns === null || Array.isArray(columns)) {
    throw invalid('The file\'s "columns" must be an object of column names, each {"description", "unit", "example"}.');
  }
  for (const [name, doc] of Object.entries(columns)) {
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
      throw invalid(
        `The file's entry for column ${JSON.stringify(name)} must be an object of description, unit and example.`,
      );
    }
    const field = Object.keys(doc).find((key) => !(COLUMN_FIELDS as readonly string[]).includes(key));
    if (field !== undefined) {
      throw invalid(
        `The file has an unknown field ${JSON.stringify(`columns.${name}.${field}`)}: a column has description, unit and example.`,
      );
    }
    change.columns.push({ name, ...checked(columnDocSchema(name), doc) });
  }
  return change;
}

/** Checks the flags' values (the CLI's --description, --column ... --unit ...) as a file's would be. */
export function dictionaryFromFlags(flags: DictionaryChange): DictionaryChange {
  return {
    ...(flags.description !== undefined
      ? { description: checked(docText("The table's description", DESCRIPTION_MAX, true), flags.description) }
      : {}),
    columns: flags.columns.map(({ name, ...doc }) => ({ name, ...checked(columnDocSchema(name), doc) })),
  };
}

/** Two changes as one (a file, then the flags, which win where both name a field). */
export function mergeChanges(first: DictionaryChange, second: DictionaryChange): DictionaryChange {
  const columns = new Map(first.columns.map((column) => [column.name, { ...column }]));
  for (const column of second.columns) columns.set(column.name, { ...columns.get(column.name), ...column });
  const description = second.description !== undefined ? second.description : first.description;
  return { ...(description !== undefined ? { description } : {}), columns: [...columns.values()] };
}

export type TableDictionary = {
  table: string;
  description: string | null;
  columns: ({ name: string; type: string } & ColumnDoc)[];
};

/**
 * `table:describe`: applies `change` to the table's dictionary in one statement, under the table's row
 * lock (two calls at once each change only their fields). A column the current version lacks is
 * refused, as is any column before the table's first version. Returns the whole dictionary.
 */
export async function describeTable(
  orderId: string,
  table: string,
  change: DictionaryChange,
): Promise<TableDictionary> {
  await findOrderForOperator(orderId);
  return db().$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<
      {
        id: string;
        description: string | null;
        docs: Record<string, ColumnDoc>;
        columns: { name: string; type: string }[] | null;
      }[]
    >`
      SELECT t.id, t.description, t.column_docs AS docs, v.columns
      FROM order_tables t LEFT JOIN table_versions v ON v.table_id = t.id AND v.version = t.current_version
      WHERE t.order_id = ${orderId} AND t.name = ${table} FOR UPDATE OF t`;
    if (!row) throw new AppError("table_not_found", `Order ${orderId} has no table named ${JSON.stringify(table)}.`);
    const known = new Set((row.columns ?? []).map((column) => column.name));
    const unknown = change.columns.find((column) => !known.has(column.name));
    if (unknown) {
      throw invalid(
        row.columns
          ? `Table ${table} has no column ${JSON.stringify(unknown.name)} in its current version; its columns are ${[...known].join(", ")}.`
          : `Table ${table} has no version yet, so no columns to describe: describe them once its first version is made.`,
      );
    }
    const docs = { ...row.docs };
    for (const { name, ...fields } of change.columns) docs[name] = { ...emptyDoc(), ...docs[name], ...fields };
    const description = change.description !== undefined ? change.description : row.description;
    await tx.$executeRaw`UPDATE order_tables SET description = ${description}, column_docs = ${JSON.stringify(docs)}::jsonb WHERE id = ${row.id}`;
    return {
      table,
      description,
      columns: (row.columns ?? []).map(({ name, type }) => ({ name, type, ...emptyDoc(), ...docs[name] })),
    };
  });
}

const emptyDoc = (): ColumnDoc => ({ description: null, unit: null, example: null });

export type Cadence = { every: string; grace: string; every_seconds: number; grace_seconds: number } | null;

/**
 * `table:cadence`: the promised time between versions (1 hour to 90 days) and its grace (default a
 * quarter of it, at most 90 days), or none. The lateness watch (./freshness.ts) reads them.
 */
export async function setCadence(
  orderId: string,
  table: string,
  input: { every?: string; grace?: string; none?: boolean },
): Promise<{ table: string; cadence: Cadence }> {
  if (input.none && (input.every !== undefined || input.grace !== undefined)) {
    throw invalid("Give either --every DURATION [--grace DURATION] or --none, not both.");
  }
  if (!input.none && input.every === undefined)
    throw invalid("Give --every DURATION (1h to 90d), or --none to remove the cadence.");
  const every = input.none ? null : duration("The cadence", input.every!, CADENCE_MIN_SECONDS);
  const grace =
    every === null ? null : input.grace === undefined ? Math.floor(every / 4) : duration("The grace", input.grace, 0);
  await findOrderForOperator(orderId);
  const updated = await db().$executeRaw`
    UPDATE order_tables SET cadence_seconds = ${every}, grace_seconds = ${grace}
    WHERE order_id = ${orderId} AND name = ${table}`;
  if (updated === 0)
    throw new AppError("table_not_found", `Order ${orderId} has no table named ${JSON.stringify(table)}.`);
  return {
    table,
    cadence:
      every === null
        ? null
        : { every: isoDuration(every), grace: isoDuration(grace!), every_seconds: every, grace_seconds: grace! },
  };
}

/** A cadence or grace in seconds, within `min`..90 days, or a sentence saying what is accepted. */
function duration(what: string, text: string, min: number): number {
  const seconds = parseDuration(text);
  if (seconds === undefined) {
    throw invalid(
      `${what} ${JSON.stringify(text.slice(0, 40))} is not a duration: write e.g. 6h, 1d, 1d12h, 90d or P1D.`,
    );
  }
  if (seconds < min || seconds > CADENCE_MAX_SECONDS) {
    throw invalid(
      `${what} of ${durationWords(seconds)} is outside ${min ? durationWords(min) : "0"} to ${durationWords(CADENCE_MAX_SECONDS)}.`,
    );
  }
  return seconds;
}

function checked<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === "unrecognized_keys")
    throw invalid(`Unknown field ${JSON.stringify(issue.keys[0])}: a column has description, unit and example.`);
  throw invalid(issue.message);
}

const invalid = (message: string) => new AppError("invalid_argument", message);
