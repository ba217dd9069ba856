import { sqlIdentifier, sqlString } from "./engine";

/**
 * The SQL of a version's change file (contract Part 4, "Change feed"), over the Parquet renditions
 * of the previous version's parts and of this version's. Pure: the engine task (./engine-tasks.ts
 * `changeFile`) runs it; its unit tests and the integration tests' independent diff check it.
 *
 * - No previous version (version 1), or an append version: every row an `insert`.
 * - A keyed snapshot: one FULL OUTER JOIN on the key. A key only in the new version is an `insert`,
 *   only in the old a `delete`, in both with any other value distinct (nulls compared as values,
 *   `IS DISTINCT FROM`) an `update_preimage` (the old row) and an `update_postimage` (the new).
 * - A keyless snapshot: rows compared whole, as a multiset (`EXCEPT ALL`: a row twice in the new
 *   version and once in the old is one `insert`).
 * A column the new version added reads as null in the old rows. Output columns: the new version's,
 * then `_change_type`. Rows in key order, each `update_preimage` just before its `update_postimage`
 * (keyless: in the order of the whole rows), so any first rows of the file (its preview, a `head`)
 * show whole changes, not a run of old values.
 */

export const CHANGE_TYPE_COLUMN = "_change_type";
export const CHANGE_TYPES = ["insert", "delete", "update_preimage", "update_postimage"] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

export type ChangeFileInput = {
  /** The new version's parts (Parquet paths). */
  current: string[];
  /** The previous version's parts, or null for a first version or an append version. */
  previous: string[] | null;
  /** The new version's columns with their DuckDB types (from its Parquet files), in order. */
  columns: { name: string; type: string }[];
  /** The previous version's column names (a prefix of `columns`). */
  previousColumns: string[];
  key: string[];
};

const files = (paths: string[]) => `read_parquet([${paths.map(sqlString).join(", ")}])`;

/** The SELECT whose rows are the change file's. */
export function changeFileQuery(input: ChangeFileInput): string {
  const names = input.columns.map((column) => sqlIdentifier(column.name));
  const current = `SELECT ${names.join(", ")} FROM ${files(input.current)}`;
  const keyOrder = input.key.map(sqlIdentifier).join(", ");
  if (!input.previous)
    return `SELECT ${names.join(", ")}, 'insert' AS ${CHANGE_TYPE_COLUMN} FROM ${files(input.current)}
      ORDER BY ${keyOrder || "ALL"}`;
  // The old rows in the new version's shape: added columns as typed nulls.
  const previousSet = new Set(input.previousColumns);
  const previous = `SELECT ${input.columns
    .map((column) =>
      previousSet.has(column.name)
        ? sqlIdentifier(column.name)
        : `CAST(NULL AS ${column.type}) AS ${sqlIdentifier(column.name)}`,
    )
    .join(", ")} FROM ${files(input.previous)}`;

  if (input.key.length === 0) {
    return `SELECT * FROM (
        SELECT *, 'insert' AS ${CHANGE_TYPE_COLUMN} FROM (${current} EXCEPT ALL ${previous})
        UNION ALL
        SELECT *, 'delete' AS ${CHANGE_TYPE_COLUMN} FROM (${previous} EXCEPT ALL ${current}))
      ORDER BY ALL`;
  }

  const side = (prefix: "o" | "n", name: string) => sqlIdentifier(`${prefix}:${name}`);
  const keySet = new Set(input.key);
  const valueColumns = input.columns.filter((column) => !keySet.has(column.name));
  const joined = `SELECT ${input.columns
    .flatMap((column) => [
      `o.${sqlIdentifier(column.name)} AS ${side("o", column.name)}`,
      `n.${sqlIdentifier(column.name)} AS ${side("n", column.name)}`,
    ])
    .join(", ")}, o."o:present", n."n:present"
    FROM (SELECT *, true AS "o:present" FROM (${previous})) o
    FULL OUTER JOIN (SELECT *, true AS "n:present" FROM (${current})) n
    ON ${input.key.map((key) => `o.${sqlIdentifier(key)} = n.${sqlIdentifier(key)}`).join(" AND ")}`;
  const differs = valueColumns.length
    ? valueColumns
        .map((column) => `j.${side("o", column.name)} IS DISTINCT FROM j.${side("n", column.name)}`)
        .join(" OR ")
    : "false";
  return `SELECT ${input.columns
    .map(
      (column) =>
        `CASE WHEN s.post THEN j.${side("n", column.name)} ELSE j.${side("o", column.name)} END AS ${sqlIdentifier(column.name)}`,
    )
    .join(", ")},
      CASE WHEN j."o:present" IS NULL THEN 'insert' WHEN j."n:present" IS NULL THEN 'delete'
           WHEN s.post THEN 'update_postimage' ELSE 'update_preimage' END AS ${CHANGE_TYPE_COLUMN}
    FROM (${joined}) j CROSS JOIN (VALUES (false), (true)) s(post)
    WHERE CASE WHEN j."o:present" IS NULL THEN s.post
               WHEN j."n:present" IS NULL THEN NOT s.post
               ELSE ${differs} END
    ORDER BY ${keyOrder}, s.post`;
}
