import { AppError } from "../errors";
import type { SharedVersion } from "./catalog";

/**
 * A table's history as the protocol asks for it: a version by number, as of a timestamp, at or
 * after a timestamp, and the ranges of `startingVersion` queries and the change data feed. Pure,
 * over the table's versions (oldest first, pruned ones included). Every refusal is the reference
 * server's: 400 INVALID_PARAMETER_VALUE with a sentence that names the versions there are.
 * Versions start at 1 (a Delta table's at 0): version 0 is refused like any version never made.
 */

export type Range = { start: SharedVersion; end: SharedVersion; versions: SharedVersion[] };

const invalid = (message: string) => new AppError("invalid_request", message);

/** The table's current version (its last). */
export function currentOf(versions: SharedVersion[]): SharedVersion {
  const current = versions.at(-1);
  if (!current) throw invalid("The table has no version yet.");
  return current;
}

function kept(versions: SharedVersion[]): string {
  const first = versions.find((version) => !version.pruned);
  const current = currentOf(versions);
  return first && first.version !== current.version
    ? `versions ${first.version} to ${current.version} are kept`
    : `version ${current.version} is the only one kept`;
}

/** Version `number`, which must exist and be kept (not pruned). */
export function keptVersion(versions: SharedVersion[], number: number, what = "version"): SharedVersion {
  const current = currentOf(versions);
  if (number > current.version) {
    throw invalid(`The ${what} ${number} is past the table's current version, ${current.version}.`);
  }
  const found = versions.find((version) => version.version === number);
  if (!found) throw invalid(`The table has no version ${number}: versions start at 1, and ${kept(versions)}.`);
  if (found.pruned) {
    throw invalid(`Version ${number} of the table was pruned (its files were deleted): ${kept(versions)}.`);
  }
  return found;
}

const TIMESTAMP_FORMAT =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2}))$/i;
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/**
 * A timestamp in the protocol's format (ISO 8601 with a zone, as `2026-11-25T10:00:00Z`), as a
 * Date; anything else is refused, naming the parameter. Each field is checked (Date.parse takes
 * 2026-02-30 as 2 March). Versions are made to the millisecond (created_at is TIMESTAMPTZ(3)): a
 * finer instant is rounded `down` for "at or before" and `up` for "at or after", so either
 * comparison stays exact.
 */
export function parseTimestamp(name: string, text: string, round: "down" | "up" = "down"): Date {
  const refuse = (why: string) =>
    invalid(
      `${name} must be a timestamp in ISO 8601 with a zone, as 2026-11-25T10:00:00Z, not ${JSON.stringify(text.slice(0, 40))}${why}.`,
    );
  const match = TIMESTAMP_FORMAT.exec(text);
  if (!match) throw refuse("");
  const [year, month, day, hour, minute, second = 0] = match.slice(1, 7).map((field) => Number(field ?? 0));
  const [fraction = "", zone, sign, zoneHours = "0", zoneMinutes = "0"] = match.slice(7);
  if (month! < 1 || month! > 12) throw refuse(`: there is no month ${month}`);
  const days = new Date(Date.UTC(2000, month!, 0)).getUTCDate() - (month === 2 && !isLeapYear(year!) ? 1 : 0);
  if (day! < 1 || day! > days) throw refuse(`: ${MONTHS[month! - 1]} ${year} has ${days} days`);
  if (hour! > 23 || minute! > 59 || second! > 59) throw refuse(": the time of day is out of range");
  if (Number(zoneHours) > 23 || Number(zoneMinutes) > 59) throw refuse(": the zone offset is out of range");
  const date = new Date(0);
  date.setUTCFullYear(year!, month! - 1, day);
  const digits = fraction.padEnd(9, "0");
  const finer = round === "up" && /[1-9]/.test(digits.slice(3));
  date.setUTCHours(hour!, minute, second, Number(digits.slice(0, 3)) + (finer ? 1 : 0));
  const offset =
    zone!.toUpperCase() === "Z" ? 0 : (sign === "-" ? -1 : 1) * (Number(zoneHours) * 60 + Number(zoneMinutes));
  const ms = date.getTime() - offset * 60_000;
  if (!Number.isFinite(ms)) throw refuse("");
  return new Date(ms);
}

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** The last version made at or before `at` (a query or metadata `timestamp`). */
export function versionAsOf(versions: SharedVersion[], at: Date, name = "timestamp"): SharedVersion {
  const found = versions.findLast((version) => version.createdAt.getTime() <= at.getTime());
  if (!found) {
    throw invalid(
      `The ${name} ${at.toISOString()} is before the table's first version (made ${versions[0]?.createdAt.toISOString()}).`,
    );
  }
  return keptVersion(versions, found.version);
}

/** The first version made at or after `at` (`startingTimestamp`); before the first version, the first. */
export function versionAtOrAfter(versions: SharedVersion[], at: Date, name = "startingTimestamp"): SharedVersion {
  const found = versions.find((version) => version.createdAt.getTime() >= at.getTime());
  if (!found) {
    const current = currentOf(versions);
    throw invalid(
      `The ${name} ${at.toISOString()} is after the table's current version, ${current.version} (made ${current.createdAt.toISOString()}).`,
    );
  }
  return keptVersion(versions, found.version);
}

/** The versions from `start` to `end` (default: the current one), all kept; `end` before `start` is refused. */
export function versionRange(versions: SharedVersion[], start: number, end?: number): Range {
  const current = currentOf(versions);
  if (start > current.version) {
    throw invalid(`The startingVersion ${start} is past the table's current version, ${current.version}.`);
  }
  if (end !== undefined && end > current.version) {
    throw invalid(`The endingVersion ${end} is past the table's current version, ${current.version}.`);
  }
  const last = end ?? current.version;
  if (last < start) throw invalid(`The range from version ${start} to ${last} is empty: the end is before the start.`);
  const first = keptVersion(versions, start, "startingVersion");
  const inRange = versions.filter((version) => version.version >= start && version.version <= last);
  const pruned = inRange.find((version) => version.pruned);
  if (pruned) throw invalid(`Version ${pruned.version} of the table was pruned: ${kept(versions)}.`);
  return { start: first, end: inRange.at(-1)!, versions: inRange };
}

/**
 * The range of a change data feed request: a start by `startingVersion` or `startingTimestamp`
 * (exactly one), an end by `endingVersion` or `endingTimestamp` (at most one; the current version
 * when neither). An ending timestamp means the last version made at or before it.
 */
export function changeRange(versions: SharedVersion[], search: URLSearchParams): Range {
  const startingVersion = search.get("startingVersion");
  const startingTimestamp = search.get("startingTimestamp");
  const endingVersion = search.get("endingVersion");
  const endingTimestamp = search.get("endingTimestamp");
  if (startingVersion !== null && startingTimestamp !== null) {
    throw invalid("Give one of startingVersion and startingTimestamp, not both.");
  }
  if (endingVersion !== null && endingTimestamp !== null) {
    throw invalid("Give one of endingVersion and endingTimestamp, not both.");
  }
  if (startingVersion === null && startingTimestamp === null) {
    throw invalid("The change data feed needs startingVersion or startingTimestamp.");
  }
  const start =
    startingVersion !== null
      ? versionNumber("startingVersion", startingVersion)
      : versionAtOrAfter(versions, parseTimestamp("startingTimestamp", startingTimestamp!, "up")).version;
  let end: number | undefined;
  if (endingVersion !== null) end = versionNumber("endingVersion", endingVersion);
  if (endingTimestamp !== null) {
    const at = parseTimestamp("endingTimestamp", endingTimestamp);
    const found = versions.findLast((version) => version.createdAt.getTime() <= at.getTime());
    if (!found) {
      throw invalid(
        `The endingTimestamp ${at.toISOString()} is before the table's first version (made ${versions[0]?.createdAt.toISOString()}).`,
      );
    }
    end = found.version;
  }
  return versionRange(versions, start, end);
}

/** A version number given as a query parameter: a whole number (0 and up; 0 is refused as never made). */
export function versionNumber(name: string, text: string): number {
  if (!/^\d{1,10}$/.test(text))
    throw invalid(`${name} must be a whole number, not ${JSON.stringify(text.slice(0, 40))}.`);
  return Number(text);
}
