#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createClient, type DatasetAccessClient, type FileDownload, type Order, type Table } from "./client.js";
import {
  DatasetAccessError,
  NetworkError,
  NoRenditionError,
  RenditionPendingError,
  UnsafeResponseError,
  VerificationError,
} from "./errors.js";
import {
  deferringPending,
  planDirectory,
  RENDITION_FORMATS,
  type PlannedFile,
  type RenditionFormat,
} from "./formats.js";
import type { WaitReason } from "./http.js";
import { pathInside, targetDirectory } from "./paths.js";
import { changes, printChangesReport } from "./changes.js";
import { formatQualityReport, qualityOf } from "./quality.js";
import { sync, type RefundedOrder, type SyncReport } from "./sync.js";
import { countOf, forTerminal } from "./terminal.js";
import { USAGE, USAGE_LINE, UsageError } from "./usage.js";
import { rowsCommand, sqlCommand } from "./cli-explore.js";
import { contractCommand } from "./cli-contract.js";

/** Exit codes, as the README documents them. */
export const EXIT = { ok: 0, failedFiles: 1, usage: 2, refused: 3, network: 4 } as const;

/** What a wait is for, as a person reads it. */
const WAITING_FOR: Record<WaitReason, string> = {
  rate_limited: "rate limited",
  unavailable: "unavailable",
  network: "network",
  pacing: "pacing",
  rendition: "a rendition is being made",
};

function progressBar(stream: NodeJS.WriteStream) {
  let bytes = 0;
  let last = 0;
  return {
    bytes: (count: number) => (bytes += count),
    file({ done, total }: { done: number; total: number }) {
      const now = Date.now();
      if (now - last < 100 && done < total) return;
      last = now;
      const width = 30;
      const filled = total ? Math.round((done / total) * width) : width;
      stream.write(
        `\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total} files, ${(bytes / 1e6).toFixed(1)} MB`,
      );
      if (done === total) stream.write("\n");
    },
  };
}

/** What became of a refunded order's copy here, in words a support person reads out. */
const REFUNDED_ACTION_TEXT = {
  kept: "kept (--delete removes it)",
  never_downloaded: "never downloaded here: nothing to remove",
  refused: "refused (its id is unsafe)",
} as const;

function refundedOutcome(refunded: RefundedOrder): string {
  if (refunded.action !== "deleted") return REFUNDED_ACTION_TEXT[refunded.action];
  const left = refunded.left.map(forTerminal).join(", ");
  return `deleted ${countOf(refunded.deleted.length, "file")}${left ? `; left what this tool did not write: ${left}` : ""}`;
}

/** The sync's report for a person: every server-supplied string escaped (see forTerminal). */
function printSyncReport(report: SyncReport): void {
  const { files } = report;
  const withoutRendition = report.format ? `, ${files.no_rendition} without a ${report.format} rendition` : "";
  console.log(
    `${countOf(report.delivered, "delivered order")}, ${countOf(files.total, "file")}: ${files.downloaded} downloaded, ${files.resumed} resumed, ${files.skipped} already there, ${files.failed} failed, ${files.refused} refused${withoutRendition}.`,
  );
  for (const refunded of report.refunded)
    console.log(`Refunded: ${forTerminal(refunded.id)} (${forTerminal(refunded.name)}): ${refundedOutcome(refunded)}`);
  for (const gone of report.superseded) {
    const what = gone.action === "deleted" ? "deleted" : "kept (--delete removes it)";
    console.log(`No longer in the order: ${forTerminal(gone.order)}/${forTerminal(gone.file)}: ${what}`);
  }
  for (const failure of report.failures)
    console.log(`Failed: ${forTerminal(failure.order)}/${forTerminal(failure.file)}: ${forTerminal(failure.error)}`);
  for (const refusal of report.refused) {
    const what =
      refusal.file === null ? forTerminal(refusal.order) : `${forTerminal(refusal.order)}/${forTerminal(refusal.file)}`;
    console.log(`Refused: ${what}: ${forTerminal(refusal.reason)}`);
  }
  for (const skipped of report.no_rendition) {
    console.log(
      `No ${report.format} rendition: ${forTerminal(skipped.order)}/${forTerminal(skipped.file)}: ${forTerminal(skipped.reason)}`,
    );
  }
}

/** The order's tables as aligned columns, every server-supplied string escaped. */
function printTables(tables: Table[]): void {
  const rows = [
    ["TABLE", "MODE", "KEY", "VERSION", "ROWS", "UPDATED"],
    ...tables.map((table) => [
      forTerminal(table.name),
      forTerminal(table.mode),
      table.key ? forTerminal(table.key.join(",")) : "-",
      table.version === null ? "-" : String(table.version),
      table.rows === null ? "-" : String(table.rows),
      table.updated_at ? forTerminal(table.updated_at) : "-",
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    console.log(
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd(),
    );
}

function formatOption(value: string | undefined): RenditionFormat | undefined {
  if (value === undefined) return undefined;
  if (!(RENDITION_FORMATS as readonly string[]).includes(value))
    throw new UsageError(`--format must be one of ${RENDITION_FORMATS.join(", ")}.`);
  return value as RenditionFormat;
}

function countOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d?$/.test(value)) throw new UsageError("--concurrency must be a whole number from 1 to 99.");
  return Number(value);
}

function secondsOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError("--rendition-wait must be a whole number of seconds.");
  return Number(value) * 1000;
}

type DownloadReport = {
  order: string;
  format: RenditionFormat | null;
  files: { file: string; path: string; format: string; sha256: string; bytes_fetched: number; resumed_from: number }[];
  refused: { file: string; reason: string }[];
  no_rendition: { file: string; reason: string }[];
  failures: { file: string; error: string }[];
};

/**
 * The download command's files of one order into `dir`, in `format`: renditions being made come
 * after the rest (see deferringPending). Unsafe names are refused, files without a rendition listed,
 * renditions still not made after the wait failed; any other error ends the command.
 */
async function downloadFiles(
  client: DatasetAccessClient,
  order: Order,
  planned: PlannedFile[],
  dir: string,
  format: RenditionFormat | undefined,
  json: boolean,
): Promise<DownloadReport> {
  const report: DownloadReport = {
    order: order.id,
    format: format ?? null,
    files: [],
    refused: [],
    no_rendition: [],
    failures: [],
  };
  const refuse = (file: string, reason: string) => {
    report.refused.push({ file, reason });
    if (!json) console.error(`Refused: ${forTerminal(file)}: ${forTerminal(reason)}`);
  };
  const noRendition = (file: string, reason: string) => {
    report.no_rendition.push({ file, reason });
    if (!json) console.error(`No ${format} rendition: ${forTerminal(file)}: ${forTerminal(reason)}`);
  };
  const done = (file: string, result: FileDownload) => {
    report.files.push({
      file,
      path: result.path,
      format: result.format,
      sha256: result.sha256,
      bytes_fetched: result.bytesFetched,
      resumed_from: result.resumedFrom,
    });
    if (!json) console.error(`${forTerminal(file)}: ${forTerminal(result.path)} (sha256 verified)`);
  };
  for (const { file, refused, noRendition: reason } of planned) {
    if (refused) refuse(String(file.name), refused);
    else if (reason) noRendition(file.name, reason);
  }
  const wanted = planned.filter(({ refused, noRendition: reason }) => !refused && !reason);
  await deferringPending(wanted, client.renditionWaitMs, async ({ file, name }, wait) => {
    try {
      done(
        file.name,
        await client.files.download(order, file, await pathInside(dir, name), { format, renditionWaitMs: wait.ms }),
      );
    } catch (error) {
      if (error instanceof UnsafeResponseError) refuse(file.name, error.message);
      else if (error instanceof NoRenditionError) noRendition(file.name, error.message);
      else if (error instanceof RenditionPendingError && wait.final) {
        report.failures.push({ file: file.name, error: error.message });
        if (!json) console.error(`Failed: ${forTerminal(file.name)}: ${forTerminal(error.message)}`);
      } else throw error;
    }
  });
  return report;
}

/** The API's query parameters a detail starts with (`q: the query is empty.`), as this command's flags. */
const FLAG_OF_PARAMETER: Record<string, string> = {
  q: "--query",
  where: "--where",
  columns: "--columns",
  order_by: "--order-by",
};

/** A detail of the API naming the flag the buyer typed rather than the query parameter it became. */
function namingFlags(detail: string): string {
  return detail.replace(/^(\w+): /, (whole, name: string) =>
    Object.hasOwn(FLAG_OF_PARAMETER, name) ? `${FLAG_OF_PARAMETER[name]}: ` : whole,
  );
}

const COMMANDS = ["orders", "download", "sync", "tables", "changes", "quality", "contract", "rows", "sql"];

/** The package's version, from its package.json (beside dist/ and src/ alike). */
function packageVersion(): string {
  const packageJson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return packageJson.version;
}

/** The server and the key come from the environment: the command has no flag for either (a key on a command line is logged). */
function clientSettings(): void {
  if (!process.env.DATASET_ACCESS_URL)
    throw new UsageError("No server URL: set DATASET_ACCESS_URL to the site's address, e.g. https://data.example.com.");
  if (!process.env.DATASET_ACCESS_KEY)
    throw new UsageError("No API key: set DATASET_ACCESS_KEY to an API key with datasets:read.");
}

/** node:util parseArgs's own refusals: each a usage error (exit 2), never a stack trace. */
function parseError(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("ERR_PARSE_ARGS_")) return undefined;
  // Node's messages add advice about "--" after the first sentence: the first says what is wrong.
  const message = (error as Error).message;
  return message.match(/^.*?[.!](?=\s|$)/)?.[0] ?? `${message}.`;
}

async function main(argv: string[]): Promise<number> {
  // `--version` alone (quality's --version takes a number) or -V, as the first argument.
  if (argv[0] === "--version" || argv[0] === "-V") {
    console.log(`dataset-access ${packageVersion()}`);
    return EXIT.ok;
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dir: { type: "string" },
      format: { type: "string" },
      "rendition-wait": { type: "string" },
      concurrency: { type: "string" },
      delete: { type: "boolean", default: false },
      order: { type: "string" },
      table: { type: "string" },
      since: { type: "string" },
      version: { type: "string" },
      "accept-warnings": { type: "boolean", default: false },
      columns: { type: "string" },
      where: { type: "string" },
      "order-by": { type: "string" },
      limit: { type: "string" },
      offset: { type: "string" },
      all: { type: "boolean", default: false },
      query: { type: "string" },
      csv: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  const json = values.json || !process.stdout.isTTY;
  const format = formatOption(values.format);
  if (!COMMANDS.includes(command)) throw new UsageError(`Unknown command "${command}".`);
  clientSettings();
  const client: DatasetAccessClient = createClient({
    renditionWaitMs: secondsOption(values["rendition-wait"]),
    onWait: ({ reason, ms }) => {
      if (!json && ms >= 1000) process.stderr.write(`\n(waiting ${Math.round(ms / 1000)} s: ${WAITING_FOR[reason]})\n`);
    },
  });

  switch (command) {
    case "orders": {
      const orders = [];
      for await (const order of client.orders.list()) orders.push(order);
      if (json) console.log(JSON.stringify(orders, null, 2));
      else
        for (const order of orders) {
          console.log(
            `${forTerminal(order.id)}  ${forTerminal(order.status).padEnd(10)}  ${String(order.files.length).padStart(4)} files  ${forTerminal(order.name)}`,
          );
        }
      return EXIT.ok;
    }
    case "download": {
      const [orderId, fileRef] = rest;
      if (!orderId) throw new UsageError("download needs an order id.");
      const order = await client.orders.get(orderId);
      const files = fileRef ? order.files.filter((file) => file.id === fileRef || file.name === fileRef) : order.files;
      if (files.length === 0) throw new UsageError(`Order ${forTerminal(order.id)} has no file ${fileRef}.`);
      const dir = await targetDirectory(values.dir ?? ".");
      const report = await downloadFiles(client, order, planDirectory(files, format), dir, format, json);
      if (json) console.log(JSON.stringify(report, null, 2));
      // Every file of an order in a format: one that has none is no failure. The one file named is.
      const missing = Boolean(fileRef) && report.no_rendition.length > 0;
      return report.refused.length > 0 || report.failures.length > 0 || missing ? EXIT.failedFiles : EXIT.ok;
    }
    case "sync": {
      if (!values.dir) throw new UsageError("sync needs --dir D.");
      const bar = !json && process.stderr.isTTY ? progressBar(process.stderr) : undefined;
      const report = await sync(client, {
        dir: values.dir,
        delete: values.delete,
        format,
        concurrency: countOption(values.concurrency),
        onBytes: bar?.bytes,
        onFile: bar?.file,
      });
      if (json) console.log(JSON.stringify(report, null, 2));
      else printSyncReport(report);
      return report.files.failed > 0 || report.refused.length > 0 ? EXIT.failedFiles : EXIT.ok;
    }
    case "tables": {
      if (!values.order) throw new UsageError("tables needs --order ID.");
      const tables = await client.tables.list(values.order);
      if (json) console.log(JSON.stringify(tables, null, 2));
      else printTables(tables);
      return EXIT.ok;
    }
    case "changes": {
      if (!values.order || !values.table || values.since === undefined || !values.dir)
        throw new UsageError("changes needs --order ID --table NAME --since N --dir D.");
      if (!/^\d+$/.test(values.since)) throw new UsageError("--since must be a version number (0: from the first).");
      const report = await changes(client, {
        order: values.order,
        table: values.table,
        since: Number(values.since),
        dir: values.dir,
        format,
        acceptWarnings: values["accept-warnings"],
        onFile: json
          ? undefined
          : ({ version, file }) => process.stderr.write(`version ${version}: ${forTerminal(file)}\n`),
      });
      if (json) console.log(JSON.stringify(report, null, 2));
      else printChangesReport(report);
      const incomplete = report.failures.length > 0 || report.pruned.length > 0 || report.refused !== null;
      return incomplete ? EXIT.failedFiles : EXIT.ok;
    }
    case "quality": {
      if (!values.order || !values.table) throw new UsageError("quality needs --order ID --table NAME.");
      if (values.version !== undefined && !/^[1-9]\d*$/.test(values.version))
        throw new UsageError("--version must be a version number (1 or more).");
      const { order, table } = values;
      const number = values.version ? Number(values.version) : (await client.tables.get(order, table)).version;
      const report = await client.tables.quality(order, table, number ?? undefined);
      if (json) console.log(JSON.stringify(report, null, 2));
      else {
        const version = await client.tables.version(order, table, number!);
        console.log(formatQualityReport(table, version.version, qualityOf(version), report));
      }
      return EXIT.ok;
    }
    case "contract":
      return contractCommand(client, values);
    case "rows":
      return rowsCommand(client, values, { json, csv: values.csv });
    case "sql":
      return sqlCommand(client, values, { json, csv: values.csv });
  }
  throw new UsageError(`Unknown command "${command}".`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError ? error.message : parseError(error);
    if (usage !== undefined) {
      console.error(`${forTerminal(usage)}\n${USAGE_LINE}`);
      process.exit(EXIT.usage);
    }
    if (error instanceof DatasetAccessError) {
      console.error(
        `The API refused: ${forTerminal(error.code)}: ${forTerminal(namingFlags(error.detail))}${error.requestId ? ` (request ${forTerminal(error.requestId)})` : ""}`,
      );
      process.exit(EXIT.refused);
    }
    if (error instanceof NetworkError) {
      console.error(`Network: ${forTerminal(error.message)}`);
      process.exit(EXIT.network);
    }
    if (error instanceof VerificationError) {
      console.error(forTerminal(error.message));
      process.exit(EXIT.failedFiles);
    }
    if (error instanceof UnsafeResponseError) {
      console.error(`Refused: ${forTerminal(error.message)}`);
      process.exit(EXIT.failedFiles);
    }
    console.error(error);
    process.exit(EXIT.failedFiles);
  },
);
