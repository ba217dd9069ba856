/**
 * Table names (contract Part 4): `^[a-z][a-z0-9_]{0,62}$`, unique in an order, and the name a file
 * added on its own gets. Pure: the CLI, the worker and prisma/migrations/*_tables_versions (which
 * names existing files' tables the same way, in SQL; tests/tables/names.test.ts holds both to it) share it.
 */

export const TABLE_NAME_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;
const MAX_LENGTH = 63;

/** Why `name` cannot be a table's name, or undefined. */
export function tableNameProblem(name: string): string | undefined {
  if (TABLE_NAME_PATTERN.test(name)) return undefined;
  return "a table name is a lower-case letter followed by at most 62 lower-case letters, digits or _";
}

/**
 * The table name a file's name gives: the part before its first dot, ASCII letters lower-cased and
 * every other character but digits and `_` made `_`, `t_` before a leading non-letter, cut to 63.
 */
export function baseTableName(fileName: string): string {
  const stem = fileName.split(".", 1)[0] ?? "";
  const lettered = [...stem.replace(/[A-Z]/g, (letter) => letter.toLowerCase())]
    .map((character) => (/^[a-z0-9_]$/.test(character) ? character : "_"))
    .join("");
  return (/^[a-z]/.test(lettered) ? lettered : `t_${lettered}`).slice(0, MAX_LENGTH);
}

/** The base name, or with `_2`, `_3`, ... (the base cut to make room) where it is taken. */
export function tableNameFor(fileName: string, isTaken: (name: string) => boolean): string {
  const base = baseTableName(fileName);
  if (!isTaken(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = `${base.slice(0, MAX_LENGTH - suffix.length)}${suffix}`;
    if (!isTaken(candidate)) return candidate;
  }
}
