// C0, DEL and C1 control characters, the invisible ones that reorder text or break lines, half surrogates.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]/gu;
const LONGEST_SHOWN = 200;

/** Control and invisible characters (all of UNPRINTABLE but `keep`) written as `\x1b`, `\u202e`. */
function escaped(text: string, keep?: string): string {
  return text.replace(UNPRINTABLE, (char) => {
    if (char === keep) return char;
    const code = char.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/**
 * A string from the server made safe to print on a terminal: control characters escaped
 * (`\x1b`, `\u202e`) so a name cannot move the cursor or recolour the screen, and very long
 * ones cut.
 */
export function forTerminal(value: unknown): string {
  const text = String(value);
  const shown = escaped(text);
  return shown.length > LONGEST_SHOWN ? `${shown.slice(0, LONGEST_SHOWN)}... (${text.length} characters)` : shown;
}

/** A whole document from the server (the contract's YAML) safe for a terminal: escaped but its line breaks, never cut. */
export function textForTerminal(text: string): string {
  return escaped(text, "\n");
}

/** "1 delivered order", "2 delivered orders": a count with its noun as a person reads it. */
export function countOf(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
