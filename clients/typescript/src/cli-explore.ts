import type { DatasetAccessClient } from "./client.js";
import type { ResultColumn, RowsOptions, RowsPage, Value } from "./explore.js";
import { forTerminal } from "./terminal.js";
import { UsageError } from "./usage.js";

/** The command's `rows` and `sql`: JSON (the default off a terminal), an aligned table on one, or `--csv`. */

type Output = { json: boolean; csv: boolean };
type Values = Partial<Record<string, string | boolean>>;

/** A cell on a terminal is cut here: the JSON and CSV outputs have every value whole. */
const CELL_WIDTH = 40;

const text = (values: Values, name: string) => (typeof values[name] === "string" ? values[name] : undefined);

function wholeOption(values: Values, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const value = text(values, name);
  if (value === undefined) return undefined;
  const number = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!(number >= min && number <= max))
    throw new UsageError(
      `--${name} must be a whole number${max < 1e15 ? ` from ${min} to ${max}` : ` of at least ${min}`}.`,
    );
  return number;
}

function columnsOption(values: Values): string[] | undefined {
  const value = text(values, "columns");
  if (value === undefined) return undefined;
  const names = value.split(",").map((name) => name.trim());
  if (names.some((name) => !name)) throw new UsageError("--columns is a comma-separated list of column names.");
  return names;
}

/** `dataset-access rows`: one page, or with --all every page from --offset on. */
export async function rowsCommand(client: DatasetAccessClient, values: Values, output: Output): Promise<number> {
  const order = text(values, "order");
  const table = text(values, "table");
  if (!order || !table) throw new UsageError("rows needs --order ID --table NAME.");
  const options: RowsOptions = {
    version: wholeOption(values, "version", 1),
    columns: columnsOption(values),
    where: text(values, "where"),
    orderBy: text(values, "order-by"),
    limit: wholeOption(values, "limit", 1, 1000),
    offset: wholeOption(values, "offset", 0),
  };
  if (!values.all) {
    const page = await client.tables.rows(order, table, options);
    print(page.columns, page.rows, output, true, page);
    if (!output.json && !output.csv && page.next_offset !== null)
      console.error(`More rows follow: --offset ${page.next_offset} (or --all).`);
    return 0;
  }
  let first: RowsPage | undefined;
  const rows: Value[][] = [];
  for await (const page of client.tables.rowPages(order, table, options)) {
    // CSV goes out page by page; the JSON and the table need every row first.
    if (output.csv) print(page.columns, page.rows, output, !first);
    else rows.push(...page.rows);
    first ??= page;
  }
  if (!output.csv) print(first!.columns, rows, output, true, { ...first!, rows, next_offset: null });
  return 0;
}

/** `dataset-access sql`: the answer, and on a terminal a note when more rows exist. */
export async function sqlCommand(client: DatasetAccessClient, values: Values, output: Output): Promise<number> {
  const order = text(values, "order");
  const query = text(values, "query");
  if (!order || !query) throw new UsageError('sql needs --order ID --query "SELECT ...".');
  const result = await client.sql(order, query, { limit: wholeOption(values, "limit", 1, 1000) });
  print(result.columns, result.rows, output, true, result);
  if (!output.json && !output.csv && result.truncated)
    console.error(`More rows exist: raise --limit (up to 1000) or narrow the query.`);
  return 0;
}

function print(columns: ResultColumn[], rows: Value[][], output: Output, header: boolean, whole?: object): void {
  if (output.csv) {
    const lines = header ? [columns.map((column) => csvCell(column.name))] : [];
    lines.push(...rows.map((row) => row.map(csvCell)));
    if (lines.length) process.stdout.write(lines.map((cells) => `${cells.join(",")}\r\n`).join(""));
  } else if (output.json) console.log(JSON.stringify(whole, null, 2));
  else printTable(columns, rows);
}

/** RFC 4180: quoted when it holds a quote, comma or line break; null an empty cell, a nested value its JSON. */
function csvCell(value: Value): string {
  if (value === null) return "";
  const cell = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

/** Aligned columns for a person: every value escaped (see forTerminal) and cut to CELL_WIDTH. */
function printTable(columns: ResultColumn[], rows: Value[][]): void {
  const cell = (value: Value) => {
    const shown = forTerminal(value === null ? "null" : typeof value === "object" ? JSON.stringify(value) : value);
    return shown.length > CELL_WIDTH ? `${shown.slice(0, CELL_WIDTH - 1)}…` : shown;
  };
  const table = [columns.map((column) => cell(column.name)), ...rows.map((row) => row.map(cell))];
  const widths = columns.map((_, at) => Math.max(...table.map((line) => line[at]!.length)));
  for (const line of table)
    console.log(
      line
        .map((value, at) => value.padEnd(widths[at]!))
        .join("  ")
        .trimEnd(),
    );
  console.error(`${rows.length} ${rows.length === 1 ? "row" : "rows"}.`);
}
