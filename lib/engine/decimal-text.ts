/**
 * Exact decimal numbers written as text (as DuckDB prints DECIMAL and integer values, and as Delta
 * Sharing's predicate literals come), compared and rounded without going through a double: Number()
 * keeps about 16 significant digits, so `1.00000000000000000001` would become 1.
 */

/** A decimal as an integer of digits and a power of ten: `coefficient * 10^exponent`. */
export type Decimal = { coefficient: bigint; exponent: number };

const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/;

/** The decimal `text` (digits, an optional point and exponent), or undefined when it is not one. */
export function parseDecimal(text: string): Decimal | undefined {
  const match = DECIMAL_TEXT.exec(text.trim());
  if (!match) return undefined;
  const [, sign, whole = "", fraction = "", exponent = "0"] = match;
  if (whole.length + fraction.length === 0 || whole.length + fraction.length > 400) return undefined;
  const coefficient = BigInt(`${whole}${fraction}` || "0");
  return { coefficient: sign === "-" ? -coefficient : coefficient, exponent: Number(exponent) - fraction.length };
}

/** -1, 0 or 1 as `a` is below, equal to or above `b`. */
export function compareDecimals(a: Decimal, b: Decimal): number {
  const exponent = Math.min(a.exponent, b.exponent);
  const left = a.coefficient * 10n ** BigInt(a.exponent - exponent);
  const right = b.coefficient * 10n ** BigInt(b.exponent - exponent);
  return left < right ? -1 : left > right ? 1 : 0;
}

/** The decimal `text` of a finite JavaScript number (its shortest round-trip form, which JSON writes too). */
export function decimalOfNumber(value: number): Decimal | undefined {
  return Number.isFinite(value) ? parseDecimal(String(value)) : undefined;
}

/** Significant digits any double holds exactly: a decimal of at most 15 survives Number() and back. */
export const DOUBLE_EXACT_DIGITS = 15;

/**
 * `value` rounded to at most `digits` significant digits, down (toward -infinity) or up (toward
 * +infinity): the bound a statistic may publish as a JSON number without moving inside the range.
 */
export function roundDecimal(value: Decimal, direction: "down" | "up", digits = DOUBLE_EXACT_DIGITS): Decimal {
  const magnitude = value.coefficient < 0n ? -value.coefficient : value.coefficient;
  const drop = magnitude.toString().length - digits;
  if (drop <= 0) return value;
  const unit = 10n ** BigInt(drop);
  let kept = value.coefficient / unit; // truncates toward zero
  const exact = kept * unit === value.coefficient;
  if (!exact && direction === "up" && value.coefficient > 0n) kept += 1n;
  if (!exact && direction === "down" && value.coefficient < 0n) kept -= 1n;
  return { coefficient: kept, exponent: value.exponent + drop };
}

/** Digits left of the point (0 for a number below 1 in magnitude). */
export function integerDigits(value: Decimal): number {
  const magnitude = value.coefficient < 0n ? -value.coefficient : value.coefficient;
  if (magnitude === 0n) return 0;
  return Math.max(0, magnitude.toString().length + value.exponent);
}

/** The JavaScript number of a decimal with at most 15 significant digits: exact, as text and back. */
export function numberOfDecimal(value: Decimal): number {
  return Number(`${value.coefficient}e${value.exponent}`);
}
