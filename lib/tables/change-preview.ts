import type { Preview } from "../datasets/access";
import type { Column } from "../datasets/profile";
import type { Json } from "../engine/preview-values";

/**
 * A change file's first rows as changes (docs/tables.md, "The change feed"): the file keeps each
 * `update_preimage` just before its `update_postimage`, so a pair becomes one update whose changed
 * values read old -> new. A pre- or post-image whose partner is past the preview's last row stays
 * a row of its own, with its own type. Pure: the dashboard's preview renders what this returns.
 */

/** The change type column, as lib/engine/change-feed.ts names it (that module is server-only). */
export const CHANGE_TYPE_COLUMN = "_change_type";

export type ChangeKind = "insert" | "delete" | "update" | "update_preimage" | "update_postimage";
/** One value of a change: unchanged (or of an insert or delete), or its old and new values. */
export type ChangeValue = { value: Json } | { old: Json; new: Json };
export type Change = { kind: ChangeKind; values: ChangeValue[] };
/** The changes of a preview: the table's columns (without the change type), and how many file rows they came from. */
export type ChangedPreview = { columns: Column[]; changes: Change[]; fileRows: number };

/** The changes in `preview` under the table's columns, or null when it is not a change file's preview. */
export function changesOf(preview: Preview): ChangedPreview | null {
  const typeAt = preview.columns.findIndex((column) => column.name === CHANGE_TYPE_COLUMN);
  if (typeAt < 0) return null;
  const columns = preview.columns.filter((_, index) => index !== typeAt);
  const valuesOf = (row: Json[]) => row.filter((_, index) => index !== typeAt);
  const changes: Change[] = [];
  for (let index = 0; index < preview.rows.length; index++) {
    const row = preview.rows[index]!;
    const next = preview.rows[index + 1];
    if (row[typeAt] === "update_preimage" && next?.[typeAt] === "update_postimage") {
      const after = valuesOf(next);
      changes.push({
        kind: "update",
        values: valuesOf(row).map((old, at) =>
          sameValue(old, after[at] ?? null) ? { value: old } : { old, new: after[at] ?? null },
        ),
      });
      index++;
    } else {
      changes.push({ kind: String(row[typeAt]) as ChangeKind, values: valuesOf(row).map((value) => ({ value })) });
    }
  }
  return { columns, changes, fileRows: preview.rows.length };
}

const sameValue = (a: Json, b: Json) => JSON.stringify(a) === JSON.stringify(b);
