/**
 * The durations of a table's cadence (docs/tables.md, "What a table promises"): what an operator types (`1h`, `6h`, `1d12h`,
 * `90d`, or ISO 8601 such as `P1D` and `PT6H`) read as seconds, and seconds written back as ISO 8601
 * (`P1D`, `PT6H`, `P22DT12H`), the form the API and the data contract show.
 */

export const CADENCE_MIN_SECONDS = 3600;
export const CADENCE_MAX_SECONDS = 90 * 86400;

const UNIT_SECONDS: Record<string, number> = { w: 604800, d: 86400, h: 3600, m: 60, s: 1 };
/** `1d12h`, `90d`, `45m`: whole numbers, each unit at most once, largest first. */
const SHORT = /^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
/** ISO 8601 durations of weeks, days and time (no years or months: their length varies). */
const ISO = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

/** The seconds of a duration, or undefined when `text` is not one. */
export function parseDuration(text: string): number | undefined {
  const value = text.trim();
  const match = SHORT.exec(value.toLowerCase()) ?? ISO.exec(value.toUpperCase());
  if (!match || match.slice(1).every((part) => part === undefined)) return undefined;
  if (value.toUpperCase().endsWith("T")) return undefined;
  const seconds = ["w", "d", "h", "m", "s"].reduce(
    (total, unit, at) => total + Number(match[at + 1] ?? 0) * UNIT_SECONDS[unit]!,
    0,
  );
  return Number.isSafeInteger(seconds) ? seconds : undefined;
}

/** Seconds as an ISO 8601 duration: days, then hours, minutes and seconds (`P1D`, `PT6H`, `P22DT12H`, `PT0S`). */
export function isoDuration(seconds: number): string {
  if (seconds === 0) return "PT0S";
  const days = Math.floor(seconds / 86400);
  const rest = seconds % 86400;
  const time = [
    [Math.floor(rest / 3600), "H"],
    [Math.floor((rest % 3600) / 60), "M"],
    [rest % 60, "S"],
  ]
    .filter(([amount]) => amount !== 0)
    .map(([amount, unit]) => `${amount}${unit}`)
    .join("");
  return `P${days ? `${days}D` : ""}${time ? `T${time}` : ""}`;
}

/** A duration for a person: `1 day`, `6 hours`, `22 days 12 hours`. */
export function durationWords(seconds: number): string {
  const parts: [number, string][] = [
    [Math.floor(seconds / 86400), "day"],
    [Math.floor((seconds % 86400) / 3600), "hour"],
    [Math.floor((seconds % 3600) / 60), "minute"],
    [seconds % 60, "second"],
  ];
  const words = parts
    .filter(([amount]) => amount > 0)
    .map(([amount, unit]) => `${amount} ${unit}${amount === 1 ? "" : "s"}`);
  return words.length ? words.join(" ") : "0 seconds";
}
