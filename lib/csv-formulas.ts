/**
 * Spreadsheet formulas in CSV made for people to open (dashboard exports and the CSV rendition of
 * a delivered file): a text value that a spreadsheet would run as a formula, one beginning with
 * `=`, `+`, `-`, `@`, a tab or a carriage return (OWASP's list), gets a leading apostrophe, which
 * spreadsheets show as text and do not display. A plain number such as `-12.5` or `+3` is left as
 * it is: it is data, not a formula. This changes those values' bytes, on purpose; the original
 * file, the Parquet and the JSON Lines renditions keep them as delivered (docs/datasets.md).
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** `text` as it goes into such a CSV cell (before quoting). */
export function formulaSafe(text: string): string {
  return FORMULA_START.test(text) && !PLAIN_NUMBER.test(text) ? `'${text}` : text;
}

/** The same rule as a DuckDB SQL expression over the text expression `value`. */
export function formulaSafeSql(value: string): string {
  return (
    `CASE WHEN regexp_matches(${value}, '${FORMULA_START.source}') ` +
    `AND NOT regexp_matches(${value}, '${PLAIN_NUMBER.source}') THEN '''' || ${value} ELSE ${value} END`
  );
}
