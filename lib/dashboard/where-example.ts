import type { Json } from "../engine/preview-values";

/**
 * The example a filter bar's `where` field shows as its placeholder, made of the table's own
 * columns (and, given one, the values of its first previewed row): `sku = 'SKU-1' AND price > 2`.
 * A made-up example would name columns the table lacks. Pure.
 */

type Column = { name: string; type: string };

const NUMBER_TYPE =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|DECIMAL.*|FLOAT|DOUBLE|REAL)$/i;
const TEXT_TYPE = /^(VARCHAR|TEXT|STRING)$/i;
/** Longer text values make a placeholder that does not fit its field. */
const LONGEST_TEXT_VALUE = 24;

/** A column as the where text names it: bare when that reads back the same, else double-quoted. */
export const filterName = (name: string) =>
  /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;

const sqlText = (value: string) => `'${value.replaceAll("'", "''")}'`;

export function whereExample(columns: Column[], firstRow?: Json[]): string {
  const valueOf = (column: Column) => firstRow?.[columns.indexOf(column)];
  const text = columns.find((column) => {
    if (!TEXT_TYPE.test(column.type)) return false;
    const value = valueOf(column);
    return firstRow === undefined || (typeof value === "string" && value.length <= LONGEST_TEXT_VALUE);
  });
  const number = columns.find((column) => {
    if (!NUMBER_TYPE.test(column.type)) return false;
    const value = valueOf(column);
    return (
      firstRow === undefined ||
      typeof value === "number" ||
      (typeof value === "string" && /^-?\d+(\.\d+)?$/.test(value))
    );
  });
  const parts = [
    text && `${filterName(text.name)} = ${sqlText(firstRow ? String(valueOf(text)) : "…")}`,
    number && `${filterName(number.name)} > ${firstRow ? String(valueOf(number)) : "10"}`,
  ].filter((part): part is string => Boolean(part));
  if (parts.length > 0) return parts.join(" AND ");
  return columns[0] ? `${filterName(columns[0].name)} IS NOT NULL` : "";
}
