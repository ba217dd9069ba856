import type { components } from "./generated/api.js";
import type { ExpectedFile } from "./download.js";
import { RenditionPendingError } from "./errors.js";
import { DirectoryNames, nameProblem, unsafeFileProblem } from "./paths.js";

type ApiFile = components["schemas"]["File"];

/** The formats a data file can be fetched as besides its own (`--format`). */
export type RenditionFormat = components["schemas"]["Rendition"]["format"];
export const RENDITION_FORMATS: readonly RenditionFormat[] = ["parquet", "csv", "jsonl"];

/** A data extension, gzipped or not, that a rendition's name replaces. */
const DATA_EXTENSION = /(\.(csv|tsv|tab|json|jsonl|ndjson))?(\.gz)?$/i;

/**
 * A rendition's file name, as the server names its download: the original's name with its data
 * extension (and `.gz`, or `.parquet`) replaced, `products.csv.gz` -> `products.parquet`. Made here
 * rather than read from the download, so a partial download has its name before the first byte; it
 * is then checked like any name from the server (paths.ts).
 */
export function renditionName(name: string, format: RenditionFormat): string {
  const stem = name.replace(DATA_EXTENSION, "").replace(/\.parquet$/i, "");
  return `${stem || "data"}.${format}`;
}

/** Whether fetching `file` as `format` means its rendition (not the original: no format, or its own). */
export function isRendition(file: Pick<ApiFile, "format">, format: RenditionFormat | undefined): boolean {
  return format !== undefined && format !== file.format;
}

/** The name `file` is written under when fetched as `format`. */
export function localName(file: Pick<ApiFile, "name" | "format">, format: RenditionFormat | undefined): string {
  return isRendition(file, format) ? renditionName(file.name, format!) : file.name;
}

/** The order's entry for `file`'s rendition in `format` (none from a server that lists no renditions). */
function renditionOf(file: ApiFile, format: RenditionFormat) {
  return Array.isArray(file.renditions) ? file.renditions.find((rendition) => rendition.format === format) : undefined;
}

/**
 * Why `file` can never be had as `format`, read from the order (no request needed), or undefined:
 * binary files and files whose data could not be read have no renditions (the API answers 404
 * preview_not_available), and a rendition that failed stays failed.
 */
export function noRenditionReason(file: ApiFile, format: RenditionFormat): string | undefined {
  if (file.format === "binary")
    return `a binary file has no ${format} rendition (the original can be downloaded as it is)`;
  if (file.profile_status === "failed") return `its data could not be read: ${file.profile_error ?? "no reason given"}`;
  if (renditionOf(file, format)?.status === "failed") return `its ${format} rendition could not be made`;
  return undefined;
}

/** The size and sha256 the API gives for a ready rendition of `file`, or undefined (none, or not ready). */
export function readyRendition(file: ApiFile, format: RenditionFormat): ExpectedFile | undefined {
  const rendition = renditionOf(file, format);
  if (rendition?.status !== "ready" || rendition.size === null || rendition.sha256 === null) return undefined;
  return { size: rendition.size, sha256: rendition.sha256 };
}

/**
 * What `file` fetched as `format` must end as: the original's size and sha256, or its rendition's
 * (undefined while the rendition is not made: known once the server has made it).
 */
export function expectedBytes(file: ApiFile, format: RenditionFormat | undefined): ExpectedFile | undefined {
  return isRendition(file, format) ? readyRendition(file, format!) : file;
}

/**
 * A file of an order, planned into one directory: the name it gets there, or why it is refused (an
 * unsafe id or name, one taken), or why it has no rendition in the format asked.
 */
export type PlannedFile = { file: ApiFile; name: string; refused?: string; noRendition?: string };

/**
 * The files of one order as they go into one directory in `format` (undefined: as they are). Files
 * fetched as they are claim their names before renditions do, so a rendition (`products.csv` as
 * parquet) never takes the name of a file delivered under it (`products.parquet`): the rendition is
 * refused instead. A file with no rendition possible claims no name.
 */
export function planDirectory(files: ApiFile[], format: RenditionFormat | undefined): PlannedFile[] {
  const names = new DirectoryNames();
  const originalsFirst = [
    ...files.filter((file) => !isRendition(file, format)),
    ...files.filter((file) => isRendition(file, format)),
  ];
  return originalsFirst.map((file): PlannedFile => {
    const unsafe = unsafeFileProblem(file);
    if (unsafe) return { file, name: String(file.name), refused: unsafe };
    const name = localName(file, format);
    if (!isRendition(file, format)) {
      const taken = names.claim(name);
      return taken ? { file, name, refused: taken } : { file, name };
    }
    const noRendition = noRenditionReason(file, format!);
    if (noRendition) return { file, name, noRendition };
    // The rendition's name is the server's name changed: checked again (`.parquet` may make it too long).
    const problem = nameProblem(name) ?? names.claim(name);
    return problem ? { file, name, refused: `as ${format} it would be named "${name}": ${problem}` } : { file, name };
  });
}

/** How long a file may wait for its rendition now: not at all on the first pass, what is left of the whole wait on the last. */
export type RenditionWait = { ms: number; final: boolean };

/**
 * Runs `fetchOne` over `items` without waiting for renditions being made (it throws
 * RenditionPendingError: the item is put aside), then comes back to those, each with what is left
 * of `waitMs` since it was first asked for. Asked for all at once, the server makes them in the
 * meantime, rather than each only after the wait for the one before. Up to `concurrency` items
 * are fetched at once (one connection each, kept alive); the first error other than
 * RenditionPendingError stops taking new items and is thrown once those in flight are done.
 */
export async function deferringPending<T>(
  items: T[],
  waitMs: number,
  fetchOne: (item: T, wait: RenditionWait) => Promise<void>,
  concurrency = 1,
): Promise<void> {
  const later: { item: T; since: number }[] = [];
  await eachAtOnce(items, concurrency, async (item) => {
    const since = Date.now();
    try {
      await fetchOne(item, { ms: 0, final: false });
    } catch (error) {
      if (!(error instanceof RenditionPendingError)) throw error;
      later.push({ item, since });
    }
  });
  await eachAtOnce(later, concurrency, ({ item, since }) =>
    fetchOne(item, { ms: Math.max(0, since + waitMs - Date.now()), final: true }),
  );
}

/** `run` over `items` in their order, at most `concurrency` at once; the first error ends it (after those running). */
async function eachAtOnce<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < items.length) {
      const item = items[next++]!;
      try {
        await run(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  if (failure) throw failure.error;
}
