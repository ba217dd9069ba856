/**
 * The data formats a delivered file can be in (the contract's Part 3), read from its name: the
 * profile then checks the bytes. Pure and dependency-free: the API, the CLI and the worker share it.
 */

export const FILE_FORMATS = ["csv", "tsv", "json", "jsonl", "parquet", "binary"] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];
export type DataFormat = Exclude<FileFormat, "binary">;

export const PROFILE_STATUSES = ["pending", "ready", "failed", "none"] as const;
export type ProfileStatus = (typeof PROFILE_STATUSES)[number];
export const RENDITION_STATUSES = ["pending", "ready", "failed"] as const;

/** Formats a file can be had in besides its own (Parquet is made for every data file). */
export const RENDITION_FORMATS = ["parquet", "csv", "jsonl"] as const;
export type RenditionFormat = (typeof RENDITION_FORMATS)[number];

export type Compression = "gzip" | null;

const EXTENSIONS: [RegExp, DataFormat][] = [
  [/\.csv$/, "csv"],
  [/\.(tsv|tab)$/, "tsv"],
  [/\.(jsonl|ndjson)$/, "jsonl"],
  [/\.json$/, "json"],
];

/**
 * A file's format and compression from its name: `.csv`, `.tsv`/`.tab`, `.json` (one array),
 * `.jsonl`/`.ndjson`, each optionally `.gz`; `.parquet` (compressed inside, never gzipped); anything
 * else is binary. prisma/migrations/*_dataset_profiles reads existing files' names the same way.
 */
export function formatFromName(name: string): { format: FileFormat; compression: Compression } {
  const lower = name.toLowerCase();
  if (lower.endsWith(".parquet")) return { format: "parquet", compression: null };
  const gzipped = lower.endsWith(".gz");
  const base = gzipped ? lower.slice(0, -3) : lower;
  const found = EXTENSIONS.find(([pattern]) => pattern.test(base));
  return found ? { format: found[1], compression: gzipped ? "gzip" : null } : { format: "binary", compression: null };
}

/** The content type of a rendition's bytes. */
export const RENDITION_CONTENT_TYPES: Record<RenditionFormat, string> = {
  parquet: "application/vnd.apache.parquet",
  csv: "text/csv",
  jsonl: "application/x-ndjson",
};

/** A rendition's download name: the original's name with its data extension (and `.gz`) replaced. */
export function renditionName(originalName: string, format: RenditionFormat): string {
  const stem = originalName.replace(/(\.(csv|tsv|tab|json|jsonl|ndjson))?(\.gz)?$/i, "").replace(/\.parquet$/i, "");
  return `${stem || "data"}.${format}`;
}

/**
 * Whether asking for `format` means the original itself: it is the file's own format (the
 * contract's rule; a gzipped CSV asked for as csv is the original, still gzipped, as its
 * `compression` says).
 */
export function isOwnFormat(own: FileFormat, format: RenditionFormat): boolean {
  return own === format;
}

/** A table subset's download name: `products-v3-subset.csv`. */
export const subsetName = (table: string, version: number, format: RenditionFormat) =>
  `${table}-v${version}-subset.${format}`;
