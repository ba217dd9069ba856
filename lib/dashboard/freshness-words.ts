import { formatDate } from "../format";
import { durationWords, parseDuration } from "../tables/durations";

/**
 * The order page's line on a table's refresh (contract Part 9), from the API's `freshness`: the
 * cadence in words and when the next version is due, or, once that has passed, that it is late and
 * since when. `late` is for the styling: the words say it too. Pure.
 */

type Freshness = { every: string; grace: string; expected_by: string | null; late: boolean } | null;

export type FreshnessWords = { late: boolean; lead?: string; text: string };

/** "every day", "every 2 days", "every 1 day 12 hours": an ISO 8601 duration in words. */
function everyWords(iso: string): string {
  return `every ${durationWords(parseDuration(iso) ?? 0).replace(/^1 (\w+)$/, "$1")}`;
}

export function freshnessWords(freshness: Freshness): FreshnessWords {
  if (!freshness) return { late: false, text: "No refresh cadence promised." };
  const grace = parseDuration(freshness.grace) ?? 0;
  const cadence = `Refreshed ${everyWords(freshness.every)} (${grace ? `grace ${durationWords(grace)}` : "no grace"})`;
  if (!freshness.expected_by) return { late: false, text: `${cadence}; the first version is not made yet.` };
  const due = formatDate(freshness.expected_by);
  if (freshness.late) {
    return {
      late: true,
      lead: "Late:",
      text: `the next version was expected by ${due} and has not come yet. ${cadence}.`,
    };
  }
  return { late: false, text: `${cadence}; next version expected by ${due}.` };
}
