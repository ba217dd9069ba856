#!/usr/bin/env node
import path from "node:path";
import { parseArgs } from "node:util";
import { createClient, type DatasetAccessClient } from "./client.js";
import { DatasetAccessError, NetworkError, VerificationError } from "./errors.js";
import { sync } from "./sync.js";

/** Exit codes, as the README documents them. */
export const EXIT = { ok: 0, failedFiles: 1, usage: 2, refused: 3, network: 4 } as const;

const USAGE = `Usage: dataset-access <command> [options]

Commands:
  orders                      list your paid orders
  download ORDER [FILE]       download one file (id or name) or every file of an order
  sync --dir D                mirror every delivered order's files into D/<order id>/<file name>

Options:
  --dir D        where files go (download: default ., sync: required)
  --delete       sync: remove the local copies of refunded orders
  --json         print a JSON report on stdout (the default when stdout is not a terminal)
  -h, --help     this help

Environment: DATASET_ACCESS_KEY (an API key with datasets:read), DATASET_ACCESS_URL (the server).
Exit codes: 0 done; 1 some files failed (see the report); 2 usage; 3 refused by the API; 4 network.`;

class UsageError extends Error {}

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

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dir: { type: "string" },
      delete: { type: "boolean", default: false },
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
  const client: DatasetAccessClient = createClient({
    onWait: ({ reason, ms }) => {
      if (!json && ms >= 1000)
        process.stderr.write(`\n(waiting ${Math.round(ms / 1000)} s: ${reason.replace("_", " ")})\n`);
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
            `${order.id}  ${order.status.padEnd(10)}  ${String(order.files.length).padStart(4)} files  ${order.name}`,
          );
        }
      return EXIT.ok;
    }
    case "download": {
      const [orderId, fileRef] = rest;
      if (!orderId) throw new UsageError("download needs an order id.");
      const order = await client.orders.get(orderId);
      const files = fileRef ? order.files.filter((file) => file.id === fileRef || file.name === fileRef) : order.files;
      if (files.length === 0) throw new UsageError(`Order ${order.id} has no file ${fileRef}.`);
      const dir = path.resolve(values.dir ?? ".");
      const results = [];
      for (const file of files) {
        const result = await client.files.download(order, file, path.join(dir, path.basename(file.name)));
        results.push({
          file: file.name,
          path: result.path,
          bytes_fetched: result.bytesFetched,
          resumed_from: result.resumedFrom,
        });
        if (!json) console.error(`${file.name}: ${result.path} (sha256 verified)`);
      }
      if (json) console.log(JSON.stringify({ order: order.id, files: results }, null, 2));
      return EXIT.ok;
    }
    case "sync": {
      if (!values.dir) throw new UsageError("sync needs --dir D.");
      const bar = !json && process.stderr.isTTY ? progressBar(process.stderr) : undefined;
      const report = await sync(client, {
        dir: values.dir,
        delete: values.delete,
        onBytes: bar?.bytes,
        onFile: bar?.file,
      });
      if (json) console.log(JSON.stringify(report, null, 2));
      else {
        const { files } = report;
        console.log(
          `${report.delivered} delivered orders, ${files.total} files: ${files.downloaded} downloaded, ${files.resumed} resumed, ${files.skipped} already there, ${files.failed} failed.`,
        );
        for (const refunded of report.refunded)
          console.log(`Refunded: ${refunded.id} (${refunded.name}): ${refunded.action}`);
        for (const failure of report.failures)
          console.log(`Failed: ${failure.order}/${failure.file}: ${failure.error}`);
      }
      return report.files.failed > 0 ? EXIT.failedFiles : EXIT.ok;
    }
    default:
      throw new UsageError(`Unknown command "${command}".`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || (error instanceof Error && /^No (server URL|API key)/.test(error.message))) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(EXIT.usage);
    }
    if ((error as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      console.error(`${(error as Error).message}\n\n${USAGE}`);
      process.exit(EXIT.usage);
    }
    if (error instanceof DatasetAccessError) {
      console.error(
        `The API refused: ${error.code}: ${error.detail}${error.requestId ? ` (request ${error.requestId})` : ""}`,
      );
      process.exit(EXIT.refused);
    }
    if (error instanceof NetworkError) {
      console.error(`Network: ${error.message}`);
      process.exit(EXIT.network);
    }
    if (error instanceof VerificationError) {
      console.error(error.message);
      process.exit(EXIT.failedFiles);
    }
    console.error(error);
    process.exit(EXIT.failedFiles);
  },
);
