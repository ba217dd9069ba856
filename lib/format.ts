/** Display formats shared by server and client components (UTC, so both render the same text). */

export function formatDate(value: Date | string | null, empty = "—"): string {
  if (value === null) return empty;
  const date = typeof value === "string" ? new Date(value) : value;
  return `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function formatDay(value: Date | string): string {
  return (typeof value === "string" ? new Date(value) : value).toISOString().slice(0, 10);
}

const UNITS = ["B", "KB", "MB", "GB", "TB"];
/** Bytes in decimal units (1 KB = 1000 B), as file managers and download dialogs show them. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value < 10 ? value.toFixed(1) : Math.round(value)} ${UNITS[unit]}`;
}

const RELATIVE_UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 86_400_000],
  ["month", 30 * 86_400_000],
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
];

/** "3 minutes ago", "in 2 days"; under a minute "just now". */
export function formatRelative(value: Date | string, now = new Date()): string {
  const date = typeof value === "string" ? new Date(value) : value;
  const difference = date.getTime() - now.getTime();
  const format = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
  for (const [unit, ms] of RELATIVE_UNITS) {
    if (Math.abs(difference) >= ms) return format.format(Math.trunc(difference / ms), unit);
  }
  return "just now";
}

/** "1 second", "30 seconds": a wait as a person reads it (a Retry-After can be 1). */
export function formatSeconds(seconds: number): string {
  return `${seconds} ${seconds === 1 ? "second" : "seconds"}`;
}
