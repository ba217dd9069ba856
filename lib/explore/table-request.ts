import { lexFilter, unknownColumn } from "../engine/where-filter";
import { AppError } from "../errors";
import { deliveredTableVersion, type OrderTable, type TableVersion, type VersionPart } from "./files";

/**
 * What rows and subsets ask alike (contract Part 7): a version of one table of the buyer's
 * delivered order, some of its columns, a filter. Checked in one order for both, so the same
 * request is refused with the same error by either: the filter's text first (refused as it is,
 * whatever the table), then the order, the table, the version, the columns.
 */
export type TableRequest = {
  buyerId: string;
  orderId: string;
  table: string;
  version?: number;
  columns?: string[];
  where?: string;
};

export type ResolvedTableRequest = {
  table: OrderTable & { currentVersion: number };
  version: TableVersion;
  /** The version's parts as stored (./files.ts readableParts makes them readable). */
  parts: VersionPart[];
  /** Every column of the version, in its order. */
  names: string[];
  /** The asked columns, or every column. */
  select: string[];
};

export async function resolveTableRequest(request: TableRequest): Promise<ResolvedTableRequest> {
  if (request.where !== undefined) lexFilter(request.where);
  const { table, version, parts } = await deliveredTableVersion(
    request.buyerId,
    request.orderId,
    request.table,
    request.version,
  );
  const names = version.columns.map((column) => column.name);
  const select = request.columns ? chosenColumns(request.columns, names) : names;
  return { table, version, parts, names, select };
}

export type RowsSort = { column: string; descending: boolean };

/**
 * The rows' total order (contract Part 7): the asked sort, then the key's columns it lacks. A
 * snapshot's key is unique (checked when the version is made), so that order is total as it is;
 * without a key, or in an append table (its versions may repeat a key), the parts' file order
 * follows (`fileOrder`), which costs the engine two more sort columns.
 */
export function rowsOrder(
  table: Pick<OrderTable, "mode" | "key">,
  asked: RowsSort[] = [],
): { orderBy: RowsSort[]; fileOrder: boolean } {
  const sorted = new Set(asked.map(({ column }) => column));
  const orderBy = [
    ...asked,
    ...table.key.filter((column) => !sorted.has(column)).map((column) => ({ column, descending: false })),
  ];
  return { orderBy, fileOrder: table.mode === "append" || table.key.length === 0 };
}

/** The asked columns, each a column of the version, none twice. */
function chosenColumns(asked: string[], names: string[]): string[] {
  const seen = new Set<string>();
  if (asked.every((name) => name === ""))
    throw new AppError("invalid_request", "columns: name at least one column, or leave it out for all.");
  for (const name of asked) {
    if (name === "")
      throw new AppError("invalid_request", "columns: a name is empty (two commas in a row, or one at an end).");
    if (!names.includes(name)) throw unknownColumn("columns", name, names);
    if (seen.has(name)) throw new AppError("invalid_request", `columns: ${JSON.stringify(name)} is asked twice.`);
    seen.add(name);
  }
  return asked;
}
