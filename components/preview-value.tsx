import type { Json } from "@/lib/engine/preview-values";

/** DuckDB's number types (big integers come as strings): their columns are aligned right. */
export const NUMERIC_TYPE = /^(U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|DECIMAL)\b/;

/**
 * One value on one line, long text cut at the cell's width (whole in its tooltip and for screen
 * readers); `inline` when it sits beside another value in its cell.
 */
export function PreviewValue({ value, inline = false }: { value: Json; inline?: boolean }) {
  if (value === null) return <span className="text-slate-500 italic">null</span>;
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return (
    <span
      title={text.length > 40 ? text : undefined}
      className={`${inline ? "inline-block align-bottom" : "block"} max-w-xs truncate ${typeof value === "object" ? "font-mono text-xs" : ""}`}
    >
      {text}
    </span>
  );
}
