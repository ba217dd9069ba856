/**
 * The bounds of a folder's listing. A store answers a listing page by page, and a broken or hostile
 * one can go on forever: S3 answering `IsTruncated` with a new token and no keys, Azure empty pages
 * with a marker, an SFTP server whose `readdir` repeats names or sends directories. So every page
 * and every entry a store sends counts (new or not, file or not), and the listing has a deadline;
 * past any bound it is given up and each file of the run is checked on its own (one request each).
 */

/** Entries a listing may send (files, folders, repeats): a folder shared with much else is not worth listing. */
export const LISTING_MAX_ENTRIES = 20_000;
/** Pages a listing may take: 20 of S3's or Azure's 1,000 entries, 200 of an SFTP server's 100 names, and room to spare. */
export const LISTING_MAX_PAGES = 250;
/** How long an attempt's listings may take in all, however slowly or quickly the store answers. */
export const LISTING_WITHIN_MS = 30_000;

export type ListingBudget = {
  /** Aborted at the deadline (or when the attempt stops): passed to every request of the listing. */
  readonly signal: AbortSignal;
  /** Counts a page of `entries`; false once the listing passed a bound, and then it stops. */
  page(entries: number): boolean;
};

/**
 * A fresh count of pages and entries for one folder's listing, under `signal` (the attempt's listing
 * deadline). `onPage` is called for each page: the run counts a page as a move (./../lease.ts), which
 * is safe since these bounds end a listing that pages forever.
 */
export function listingBudget(
  signal: AbortSignal,
  { maxEntries = LISTING_MAX_ENTRIES, maxPages = LISTING_MAX_PAGES, onPage = () => {} } = {},
): ListingBudget {
  let pages = 0;
  let entries = 0;
  return {
    signal,
    page(count) {
      pages++;
      entries += count;
      onPage();
      return pages <= maxPages && entries <= maxEntries && !signal.aborted;
    },
  };
}
