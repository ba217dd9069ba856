import type { Column } from "../engine/engine-tasks";
import { CHANGE_TYPE_COLUMN } from "../engine/change-feed";

/**
 * The checks of a publication's columns (./pipeline.ts): its parts against each other, against the
 * previous version, and against the names the change feed adds to them.
 */

/**
 * The columns a change feed adds to the table's: `_change_type` in the change file, and
 * `_commit_version` and `_commit_timestamp` in Delta Sharing's and the clients' change rows. A data
 * column of one of these names would be shadowed or renamed there (DuckDB renamed the real change
 * type `_change_type_1`, counting no changes), so it is refused. DuckDB and Spark compare names
 * without case: so does this.
 */
export const RESERVED_COLUMNS = [CHANGE_TYPE_COLUMN, "_commit_version", "_commit_timestamp"] as const;

/** Why the columns cannot be a table's, a sentence naming the first reserved one, or undefined. */
export function reservedColumnProblem(columns: Column[]): string | undefined {
  const reserved = new Set<string>(RESERVED_COLUMNS);
  const taken = columns.find((column) => reserved.has(column.name.toLowerCase()));
  if (!taken) return undefined;
  return `Column "${taken.name}" has a name the change feed reserves for its own columns (${RESERVED_COLUMNS.join(", ")}): rename it in the parts and publish again.`;
}

/** How two parts' columns differ (names, order and types; nullability may differ), or undefined. */
export function columnDifference(expected: Column[], actual: Column[]): string | undefined {
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    const want = expected[i];
    const got = actual[i];
    if (!got) return `it has no column "${want!.name}"`;
    if (!want) return `it has an extra column "${got.name}"`;
    if (want.name !== got.name) return `its column ${i + 1} is "${got.name}", not "${want.name}"`;
    if (want.type !== got.type) return `its column "${got.name}" is ${got.type}, not ${want.type}`;
  }
  return undefined;
}

/**
 * Why a version's columns cannot follow the previous version's, or undefined: they must be the same
 * columns with the same types, in the same order, with new columns only after them.
 */
export function columnEvolutionProblem(
  previous: Column[],
  next: Column[],
  previousVersion: number,
): string | undefined {
  for (const [i, column] of previous.entries()) {
    const now = next[i];
    if (!now || now.name !== column.name) {
      const moved = next.find((candidate) => candidate.name === column.name);
      return moved
        ? `Column "${column.name}" moved from position ${i + 1} in version ${previousVersion}; columns keep their order, and new ones come after them.`
        : `Column "${column.name}" of version ${previousVersion} is missing (renamed or dropped); a new version keeps every column and may only add columns after them.`;
    }
    if (now.type !== column.type) {
      return `Column "${column.name}" was ${column.type} in version ${previousVersion} and is ${now.type} here; a column keeps its type.`;
    }
  }
  return undefined;
}
