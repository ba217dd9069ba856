import { z } from "zod";
import { pruneTable, tableHistory } from "../../lib/tables/admin";
import { publishTable } from "../../lib/tables/publish";
import { rejectPublication, releasePublication, tableChecks } from "../../lib/tables/quality-admin";
import { postNotice } from "../../lib/tables/notices";
import {
  describeTable,
  dictionaryFromFile,
  dictionaryFromFlags,
  mergeChanges,
  setCadence,
  type TableDictionary,
} from "../../lib/tables/dictionary";
import { readDictionaryFile } from "./dictionary-file";
import { assertReadableFile, command, interruption, readableFile, text, wholeNumber, type Command } from "./command";

/** Tables: publishing a version from parts, reading and trimming the history. */

export const commands: Record<string, Command> = {
  "table:publish": command(
    z
      .object({
        order: text,
        table: text,
        path: z.array(text).optional(),
        from: z.array(text).optional(),
        mode: z.enum(["snapshot", "append"]).optional(),
        key: text.optional(),
      })
      .refine((options) => (options.path?.length ?? 0) + (options.from?.length ?? 0) > 0, {
        message: "give the parts with --path FILE or --from s3://BUCKET/KEY (each may be repeated)",
        path: ["path"],
      }),
    async (options) => {
      for (const filePath of options.path ?? []) await assertReadableFile(filePath);
      const published = await publishTable({
        orderId: options.order,
        table: options.table,
        mode: options.mode,
        key: options.key?.split(","),
        parts: [
          ...(options.path ?? []).map((filePath) => ({ source: readableFile(filePath) })),
          ...(options.from ?? []).map((location) => ({ source: { location } })),
        ],
        signal: interruption.signal,
      });
      return {
        json: {
          table: published.table,
          publication: published.publication,
          files: published.files.map(({ id, name, size, sha256 }) => ({ id, name, size, sha256 })),
        },
        text:
          `Published ${published.files.length} part(s) to table ${published.table} as publication ${published.publication}; ` +
          `it becomes the next version once every part is profiled and checked (table:versions shows it).\n` +
          published.files
            .map((file) => `  ${file.id} "${file.name}" (${file.size} bytes, sha256 ${file.sha256})`)
            .join("\n"),
      };
    },
  ),

  "table:versions": command(z.object({ order: text, table: text }), async (options) => {
    const history = await tableHistory(options.order, options.table);
    const versions = history.versions.map(
      (version) =>
        `  v${version.version}  ${version.created_at}  ${version.rows} rows` +
        (version.changes
          ? `  +${version.changes.inserted} ~${version.changes.updated} -${version.changes.deleted}`
          : "") +
        (version.quality.status === "passed" ? "" : `  quality ${version.quality.status}`) +
        (version.pruned ? "  (pruned)" : ""),
    );
    const publications = history.publications.map(
      (publication) =>
        `  ${publication.id}  ${publication.created_at}  ${publication.status}` +
        (publication.version ? ` (v${publication.version})` : "") +
        (publication.error ? `: ${publication.error}` : "") +
        publication.files.map((file) => `\n    ${file.id} "${file.name}" (${file.size} bytes)`).join("") +
        (publication.status === "held"
          ? `\n    held by: ${publication
              .report!.checks.filter((check) => check.outcome === "held")
              .map(
                (check) =>
                  `${check.name}${check.column ? `(${check.column})` : ""} = ${check.value} > ${check.threshold}`,
              )
              .join(", ")}`
          : ""),
    );
    return {
      json: {
        versions: history.versions.map(({ version, created_at, rows, changes, quality }) => ({
          version,
          created_at,
          rows,
          changes,
          quality,
        })),
        publications: history.publications.map(({ id, status, error, created_at, files, report }) => ({
          id,
          status,
          error,
          created_at,
          files,
          report,
        })),
      },
      text: `Versions of ${options.table}:\n${versions.join("\n") || "  (none yet)"}\nPublications:\n${publications.join("\n")}`,
    };
  }),

  "table:prune": command(z.object({ order: text, table: text, keep: wholeNumber.min(1) }), async (options) => {
    const report = await pruneTable(options.order, options.table, options.keep);
    return {
      json: report,
      text: report.pruned.length
        ? `Pruned versions ${report.pruned.join(", ")} of ${options.table}: ${report.files_deleted} files, ${report.bytes_deleted} bytes deleted; kept ${report.kept.join(", ")}.`
        : `Nothing to prune: ${options.table} has ${report.kept.length} version(s).`,
    };
  }),

  "table:notice": command(
    // Checked by postNotice, so the CLI and any other caller refuse alike.
    z.object({
      order: text,
      table: text,
      type: z.string(),
      message: z.string(),
      "effective-at": z.string().optional(),
    }),
    async (options) => {
      const notice = await postNotice({
        orderId: options.order,
        table: options.table,
        type: options.type,
        message: options.message,
        effectiveAt: options["effective-at"],
      });
      return { json: notice, text: `Posted ${notice.type} notice ${notice.id} on ${options.table}.` };
    },
  ),

  // What the table promises (Part 9): its data dictionary and its refresh cadence.
  "table:describe": command(
    z.object({
      order: text,
      table: text,
      description: z.string().optional(),
      column: z
        .array(
          z.object({
            name: text,
            description: z.string().optional(),
            unit: z.string().optional(),
            example: z.string().optional(),
          }),
        )
        .optional(),
      file: text.optional(),
    }),
    async (options) => {
      const flags = dictionaryFromFlags({ description: options.description, columns: options.column ?? [] });
      const change = options.file
        ? mergeChanges(dictionaryFromFile(await readDictionaryFile(options.file)), flags)
        : flags;
      const dictionary = await describeTable(options.order, options.table, change);
      return { json: dictionary, text: dictionaryText(dictionary) };
    },
    { by: "column", members: ["description", "unit", "example"], leading: ["description"] },
  ),

  "table:cadence": command(
    z.object({
      order: text,
      table: text,
      every: z.string().optional(),
      grace: z.string().optional(),
      none: z.boolean().optional(),
    }),
    async (options) => {
      const { cadence } = await setCadence(options.order, options.table, options);
      return {
        json: { table: options.table, cadence },
        text: cadence
          ? `${options.table} is promised a new version every ${cadence.every}, late after ${cadence.grace} more.`
          : `${options.table} has no cadence: it is never announced late.`,
      };
    },
  ),

  // The quality gate (Part 6): thresholds, and held publications released or rejected.
  "table:checks": command(z.object({ order: text, table: text, set: z.array(text).optional() }), async (options) => {
    const checks = await tableChecks(options.order, options.table, options.set);
    const lines = checks.map(
      (check) =>
        `  ${check.name.padEnd(24)} ${String(check.threshold).padEnd(6)} ${check.level}${check.default ? "" : "  (set)"}`,
    );
    return { json: { checks }, text: `Checks of ${options.table}:\n${lines.join("\n")}` };
  }),

  "table:release": command(z.object({ publication: text, reason: text }), async (options) => {
    const released = await releasePublication(options.publication, options.reason);
    return {
      json: released,
      text: `Released publication ${released.id}: it becomes the table's next version (table:versions shows it).`,
    };
  }),

  "table:reject": command(z.object({ publication: text, reason: text }), async (options) => {
    const rejected = await rejectPublication(options.publication, options.reason);
    return {
      json: rejected,
      text: `Rejected publication ${rejected.id}; the table keeps its current version and later publications go on.`,
    };
  }),
};

function dictionaryText(dictionary: TableDictionary): string {
  const lines = dictionary.columns.map(
    (column) =>
      `  ${column.name.padEnd(24)} ${column.description ?? "(not described)"}${column.unit ? ` [${column.unit}]` : ""}${column.example ? ` e.g. ${column.example}` : ""}`,
  );
  return [`${dictionary.table}: ${dictionary.description ?? "(no description)"}`, ...lines].join("\n");
}
