/**
 * The short text an agent reads beside a tool's structuredContent: a few lines and small tables
 * (pipe-separated, like Markdown), never a JSON dump. Long cells are cut and long tables end with
 * how many rows were left out; the structured content always has them all.
 */

/** Rows a text table shows; the rest are counted. */
export const TEXT_TABLE_ROWS = 20;
/** Columns a text table shows (a wide result's text stays small: the answer's budget counts it). */
export const TEXT_TABLE_COLUMNS = 12;
const CELL_CHARACTERS = 40;

export function textTable(header: string[], rows: unknown[][], shown = TEXT_TABLE_ROWS): string {
  if (rows.length === 0) return "(no rows)";
  const columns = Math.min(header.length, TEXT_TABLE_COLUMNS);
  const line = (cells: unknown[]) => `| ${cells.slice(0, columns).map(cellText).join(" | ")} |`;
  const lines = [
    line(header),
    `|${header
      .slice(0, columns)
      .map(() => "---")
      .join("|")}|`,
    ...rows.slice(0, shown).map(line),
  ];
  if (rows.length > shown) lines.push(`(${rows.length - shown} more rows in structuredContent)`);
  if (header.length > columns) lines.push(`(${header.length - columns} more columns in structuredContent)`);
  return lines.join("\n");
}

function cellText(value: unknown): string {
  const text =
    value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  const flat = text.replace(/[\r\n|]/g, (character) => (character === "|" ? "\\|" : " "));
  return flat.length > CELL_CHARACTERS ? `${flat.slice(0, CELL_CHARACTERS - 1)}…` : flat;
}

/** Lines joined, empty ones dropped. */
export function lines(...parts: (string | false | null | undefined)[]): string {
  return parts.filter((part): part is string => Boolean(part)).join("\n");
}
