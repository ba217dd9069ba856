import { createReadStream, promises as fs } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import { OPERATOR, recordSecurityEvent } from "../lib/security/log";
import { createBuyer, findBuyerByEmail } from "../lib/buyers";
import { disconnectDb } from "../lib/db/client";
import { closeJobQueue } from "../lib/queue";
import { prepareDatabase } from "../lib/db/runtime";
import { AppError } from "../lib/errors";
import { apiKeyExpiryDaysSchema, apiKeyPermissionSchema, createApiKey, revokeApiKey } from "../lib/keys";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { profileFiles } from "../lib/datasets/profile";
import {
  addOrderFile,
  createOrder,
  findOrderForOperator,
  registerStoredObject,
  setOrderStatus,
} from "../lib/operator/orders";
import { pruneTable, tableHistory } from "../lib/tables/admin";
import { publishTable } from "../lib/tables/publish";
import { migrateLocalFilesToS3, type MigrationProgress } from "../lib/storage/migrate";
import { orderStatusSchema } from "../lib/schemas/order-status";
import {
  disableSocialAccess,
  enableSocialAccess,
  importSocialProfiles,
  setPlatformAvailability,
} from "../lib/social/admin";
import { socialPlatformSchema } from "../lib/schemas/social-platforms";
import { DESTINATION_TYPES, EXPORT_FORMATS } from "../lib/exports/config";
import { createDestination, findDestinationForOperator, testDestination } from "../lib/exports/destinations";
import { exportNow, waitForRuns } from "../lib/exports/run-now";
import { logToStderr } from "../lib/log";
import { runMain } from "./run-main";

/**
 * The operator CLI: `npm run admin -- <command> [--options] [--json]`.
 * Success prints a summary (or, with --json, one JSON object) on stdout and exits 0; any error
 * prints a clear message on stderr (and, with --json, `{"error": {...}}` on stdout) and exits 1.
 */

type Output = { json: Record<string, unknown>; text: string };
type Command = { usage: string; options: z.ZodObject; run: (options: never) => Promise<Output> };

const text = z.string().trim().min(1);
const wholeNumber = z.coerce.number().int();
const bool = z.enum(["true", "false"]).transform((value) => value === "true");

const commands: Record<string, Command> = {
  "buyer:create": command("--email E", z.object({ email: text }), async ({ email }) => {
    const buyer = await createBuyer(email);
    return {
      json: { id: buyer.id, email: buyer.email, created: buyer.created },
      text: `${buyer.created ? "Created" : "Already existed:"} buyer ${buyer.id} <${buyer.email}>`,
    };
  }),

  "order:create": command(
    "--email E --name N [--status unfinished|delivered|refunded]",
    z.object({ email: text, name: text, status: orderStatusSchema.optional() }),
    async ({ email, name, status }) => {
      const buyer = await findBuyerByEmail(email);
      const order = await createOrder({ buyerId: buyer.id, name, status });
      return {
        json: { id: order.id, status: order.status },
        text: `Created order ${order.id} (${order.status}) for ${buyer.email}`,
      };
    },
  ),

  "order:add-file": command(
    "--order ID (--path FILE | --from s3://BUCKET/KEY) [--name NAME] [--content-type T] [--table NAME]",
    z
      .object({
        order: text,
        path: text.optional(),
        from: text.optional(),
        name: text.optional(),
        "content-type": text.optional(),
        table: text.optional(),
      })
      .refine((options) => (options.path === undefined) !== (options.from === undefined), {
        message: "give exactly one of --path FILE or --from s3://BUCKET/KEY",
        path: ["path"],
      }),
    async (options) => {
      const input = {
        orderId: options.order,
        name: options.name,
        contentType: options["content-type"],
        table: options.table,
      };
      let file;
      if (options.from !== undefined) {
        file = await registerStoredObject({ ...input, location: options.from });
      } else {
        const filePath = options.path!;
        await assertReadableFile(filePath);
        file = await addOrderFile({ ...input, source: readableFile(filePath), signal: interruption.signal });
      }
      return {
        json: {
          id: file.id,
          name: file.name,
          size: file.size,
          sha256: file.sha256,
          content_type: file.contentType,
          table: file.table,
        },
        text:
          `Added file ${file.id} "${file.name}" (${file.size} bytes, ${file.contentType}, sha256 ${file.sha256})` +
          (file.table ? `, published to table ${file.table}` : ""),
      };
    },
  ),

  "table:publish": command(
    "--order ID --table NAME (--path FILE | --from s3://BUCKET/KEY)... [--mode snapshot|append] [--key COL[,COL...]]",
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

  "table:versions": command("--order ID --table NAME", z.object({ order: text, table: text }), async (options) => {
    const history = await tableHistory(options.order, options.table);
    const versions = history.versions.map(
      (version) =>
        `  v${version.version}  ${version.created_at}  ${version.rows} rows` +
        (version.changes
          ? `  +${version.changes.inserted} ~${version.changes.updated} -${version.changes.deleted}`
          : "") +
        (version.pruned ? "  (pruned)" : ""),
    );
    const publications = history.publications.map(
      (publication) =>
        `  ${publication.id}  ${publication.created_at}  ${publication.status}` +
        (publication.version ? ` (v${publication.version})` : "") +
        (publication.error ? `: ${publication.error}` : ""),
    );
    return {
      json: {
        versions: history.versions.map(({ version, created_at, rows, changes }) => ({
          version,
          created_at,
          rows,
          changes,
        })),
        publications: history.publications.map(({ id, status, error, created_at }) => ({
          id,
          status,
          error,
          created_at,
        })),
      },
      text: `Versions of ${options.table}:\n${versions.join("\n") || "  (none yet)"}\nPublications:\n${publications.join("\n")}`,
    };
  }),

  "table:prune": command(
    "--order ID --table NAME --keep N",
    z.object({ order: text, table: text, keep: wholeNumber.min(1) }),
    async (options) => {
      const report = await pruneTable(options.order, options.table, options.keep);
      return {
        json: report,
        text: report.pruned.length
          ? `Pruned versions ${report.pruned.join(", ")} of ${options.table}: ${report.files_deleted} files, ${report.bytes_deleted} bytes deleted; kept ${report.kept.join(", ")}.`
          : `Nothing to prune: ${options.table} has ${report.kept.length} version(s).`,
      };
    },
  ),

  "files:profile": command(
    "(--order ID | --all)",
    z
      .object({ order: text.optional(), all: z.boolean().optional() })
      .refine(({ order, all }) => Boolean(order) !== Boolean(all), "Give either --order ID or --all."),
    async ({ order, all }) => {
      if (order) await findOrderForOperator(order);
      const run = await profileFiles(all ? "all" : { orderId: order! });
      const errors = run.errors.map(({ file_id, reason }) => `  ${file_id}: ${reason}`);
      const output = {
        json: run,
        text:
          `Profiled ${run.profiled} files; ${run.failed} could not be read (see their profile_error); ${run.skipped} skipped (binary or already profiled).` +
          (errors.length
            ? `\n${errors.length} could not be profiled now (run again later):\n${errors.join("\n")}`
            : ""),
      };
      // Every file was tried; the ones that could not be are reported, and the exit code says so.
      if (errors.length > 0) throw new PartialFailure(output);
      return output;
    },
  ),

  "storage:migrate": command(
    "--to s3 [--dry-run] [--keep-local]",
    z.object({
      to: z.literal("s3"),
      "dry-run": z.boolean().optional(),
      "keep-local": z.boolean().optional(),
    }),
    async (options) => {
      const progress = process.stderr.isTTY ? progressLine() : undefined;
      const report = await migrateLocalFilesToS3({
        dryRun: options["dry-run"],
        keepLocal: options["keep-local"],
        signal: interruption.signal,
        onProgress: progress?.update,
      });
      progress?.end();
      const planned = report.planned.map((file) => `  ${file.id}: ${file.from} -> ${file.to} (${file.size} bytes)`);
      const failed = report.failed.map((file) => `  ${file.id}: ${file.reason}`);
      const output = {
        json: {
          dry_run: report.dryRun,
          total: report.total,
          migrated: report.migrated,
          bytes: report.bytes,
          failed: report.failed,
          ...(report.dryRun ? { planned: report.planned } : {}),
        },
        text: report.dryRun
          ? `Would copy ${report.total} local files to S3:${planned.length ? `\n${planned.join("\n")}` : ""}`
          : `Copied and verified ${report.migrated} of ${report.total} local files (${report.bytes} bytes); ${report.failed.length} failed${failed.length ? `:\n${failed.join("\n")}` : ""}`,
      };
      if (report.failed.length > 0) throw new PartialFailure(output);
      return output;
    },
  ),

  "order:set-status": command(
    "--order ID --status delivered|refunded|unfinished",
    z.object({ order: text, status: orderStatusSchema }),
    async ({ order, status }) => {
      const updated = await setOrderStatus(order, status);
      return {
        json: { id: updated.id, status: updated.status, delivered_at: updated.deliveredAt?.toISOString() ?? null },
        text: `Order ${updated.id} is now ${updated.status}`,
      };
    },
  ),

  "key:create": command(
    "--email E --name N --permission datasets:read|scrape:read --expires-days 30|90|365",
    z.object({
      email: text,
      name: text,
      permission: apiKeyPermissionSchema,
      "expires-days": z.coerce.number().pipe(apiKeyExpiryDaysSchema),
    }),
    async (options) => {
      const buyer = await findBuyerByEmail(options.email);
      const key = await createApiKey({
        buyerId: buyer.id,
        name: options.name,
        permission: options.permission,
        expiresInDays: options["expires-days"],
      });
      await recordSecurityEvent(buyer.id, "key_created", OPERATOR, {
        id: key.id,
        detail: `“${key.name}” (${key.permission})`,
      });
      return {
        json: {
          id: key.id,
          secret: key.secret,
          name: key.name,
          permission: key.permission,
          expires_at: key.expiresAt.toISOString(),
        },
        text: `Created key ${key.id} (${key.permission}, expires ${key.expiresAt.toISOString()})\nSecret (shown only now): ${key.secret}`,
      };
    },
  ),

  "key:revoke": command("--id ID", z.object({ id: text }), async ({ id }) => {
    const revoked = await revokeApiKey(id);
    if (!revoked.alreadyRevoked) {
      await recordSecurityEvent(revoked.buyerId, "key_revoked", OPERATOR, { id, detail: `“${revoked.name}”` });
    }
    return {
      json: { id, revoked_at: revoked.revokedAt.toISOString() },
      text: `Key ${id} revoked at ${revoked.revokedAt.toISOString()}`,
    };
  }),

  "social:enable": command(
    "--email E --allowance N --rate-per-minute M",
    z.object({ email: text, allowance: wholeNumber, "rate-per-minute": wholeNumber }),
    async (options) => {
      const buyer = await findBuyerByEmail(options.email);
      const access = await enableSocialAccess(buyer.id, options.allowance, options["rate-per-minute"]);
      return {
        json: {
          buyer_id: buyer.id,
          enabled: true,
          allowance: access.monthlyAllowance,
          rate_per_minute: access.ratePerMinute,
        },
        text: `Social API enabled for ${buyer.email}: ${access.monthlyAllowance} reads/month, ${access.ratePerMinute}/minute`,
      };
    },
  ),

  "social:disable": command("--email E", z.object({ email: text }), async ({ email }) => {
    const buyer = await findBuyerByEmail(email);
    await disableSocialAccess(buyer.id);
    return { json: { buyer_id: buyer.id, enabled: false }, text: `Social API disabled for ${buyer.email}` };
  }),

  "social:import": command("--path FILE.ndjson", z.object({ path: text }), async (options) => {
    await assertReadableFile(options.path);
    const report = await importSocialProfiles(options.path);
    const rejectedLines = report.rejected.map(({ line, reason }) => `  line ${line}: ${reason}`).join("\n");
    const output = {
      json: { imported: report.imported, rejected: report.rejected.length, errors: report.rejected },
      text: `Imported ${report.imported} profiles; rejected ${report.rejected.length} lines${rejectedLines ? `:\n${rejectedLines}` : ""}`,
    };
    if (report.rejected.length > 0) throw new PartialFailure(output);
    return output;
  }),

  "social:platform": command(
    "--platform P --available true|false [--retry-after SECONDS]",
    z.object({
      platform: socialPlatformSchema,
      available: bool,
      "retry-after": wholeNumber.min(1).max(86400).optional(),
    }),
    async (options) => {
      const status = await setPlatformAvailability(options.platform, options.available, options["retry-after"]);
      return {
        json: { platform: status.platform, available: status.available, retry_after: status.retryAfterSeconds },
        text: `${status.platform} is now ${status.available ? "available" : "unavailable"}`,
      };
    },
  ),

  "export:destination": command(
    "--email E --name N --type s3|azure|sftp --config FILE.json [--orders all|ID,ID] [--format original|parquet|csv|jsonl] [--template T]",
    z.object({
      email: text,
      name: text,
      type: z.enum(DESTINATION_TYPES),
      config: text,
      orders: text.optional(),
      format: z.enum(EXPORT_FORMATS).optional(),
      template: text.optional(),
    }),
    async (options) => {
      const buyer = await findBuyerByEmail(options.email);
      await assertReadableFile(options.config);
      // The file holds secrets: it is parsed here and never echoed, not even in an error.
      let fields: unknown;
      try {
        fields = JSON.parse(await fs.readFile(options.config, "utf8"));
      } catch {
        throw new AppError("invalid_argument", `${options.config} is not a JSON file.`);
      }
      if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
        throw new AppError(
          "invalid_argument",
          `${options.config} must hold one JSON object of the ${options.type} settings.`,
        );
      }
      const destination = await createDestination(
        buyer.id,
        {
          name: options.name,
          type: options.type,
          fields: fields as Record<string, unknown>,
          orders:
            !options.orders || options.orders === "all" ? "all" : options.orders.split(",").map((id) => id.trim()),
          format: options.format,
          template: options.template,
        },
        OPERATOR,
      );
      return { json: { id: destination.id }, text: `Created export destination ${destination.id} for ${buyer.email}` };
    },
  ),

  "export:test": command("--destination ID", z.object({ destination: text }), async (options) => {
    const destination = await findDestinationForOperator(options.destination);
    const result = await testDestination(destination, OPERATOR);
    const output = { json: result, text: `${result.ok ? "OK" : "FAILED"}: ${result.message}` };
    if (!result.ok) throw new PartialFailure(output);
    return output;
  }),

  "export:run": command(
    "--order ID [--destination ID] [--wait]",
    z.object({ order: text, destination: text.optional(), wait: z.boolean().optional() }),
    async (options) => {
      const runs = await exportNow({ orderId: options.order, destinationId: options.destination });
      const shown = options.wait ? await waitForRuns(runs.map((run) => run.id)) : runs;
      return {
        json: { runs: shown },
        text: shown
          .map(
            (run) =>
              `${run.id} to “${run.destination.name}”: ${run.state}, ${run.files} files, ${run.bytes} bytes${run.error ? ` (${run.error})` : ""}`,
          )
          .join("\n"),
      };
    },
  ),
};

function command<S extends z.ZodObject>(
  usage: string,
  options: S,
  run: (options: z.infer<S>) => Promise<Output>,
): Command {
  return { usage, options, run: run as (options: never) => Promise<Output> };
}

/** Aborted when the operator interrupts the command (SIGINT, SIGTERM). */
const interruption = new AbortController();
/** The shell's code for a command ended by Ctrl+C. */
const INTERRUPTED_EXIT_CODE = 130;

/** A boolean option (`--dry-run`) rather than one that takes a value. */
function isFlag(schema: z.ZodType | undefined): boolean {
  const inner = schema instanceof z.ZodOptional ? schema.unwrap() : schema;
  return inner instanceof z.ZodBoolean;
}

/** An option given as often as needed (`--path A --path B`). */
function isRepeatable(schema: z.ZodType | undefined): boolean {
  const inner = schema instanceof z.ZodOptional ? schema.unwrap() : schema;
  return inner instanceof z.ZodArray;
}

/** A progress line on a terminal, rewritten in place. */
function progressLine() {
  const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;
  return {
    update: ({ done, total, bytesDone, bytesTotal }: MigrationProgress) =>
      process.stderr.write(`\r${done}/${total} files, ${gb(bytesDone)} of ${gb(bytesTotal)}   `),
    end: () => process.stderr.write("\n"),
  };
}

/** Some work succeeded, some input was refused: report both and exit non-zero. */
class PartialFailure extends Error {
  constructor(readonly output: Output) {
    super("some input was refused");
  }
}

/** A part read from a path: opened when stored, and again to compare with what an earlier, killed run stored. */
const readableFile = (filePath: string) => ({ path: filePath, open: () => createReadStream(filePath) });

async function assertReadableFile(filePath: string): Promise<void> {
  const stat = await fs.stat(filePath).catch(() => null);
  if (!stat) throw new AppError("source_file_unreadable", `No file at ${filePath}.`);
  // A named pipe is fine too (e.g. `--path <(curl ...)`): it is read as a stream like any file.
  if (!stat.isFile() && !stat.isFIFO())
    throw new AppError("source_file_unreadable", `${filePath} is not a regular file.`);
  await fs.access(filePath, fs.constants.R_OK).catch(() => {
    throw new AppError("source_file_unreadable", `${filePath} cannot be read (permissions).`);
  });
}

function usage(): string {
  const lines = Object.entries(commands).map(([name, { usage }]) => `  ${name} ${usage}`);
  return `Usage: npm run admin -- <command> [options] [--json]\n\nCommands:\n${lines.join("\n")}`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const json = rest.includes("--json");
  const fail = (code: string, message: string) => {
    if (json) console.log(JSON.stringify({ error: { code, message } }));
    console.error(`error: ${message}`);
    return 1;
  };
  if (!name || name === "help" || name === "--help") {
    console.error(usage());
    return name ? 0 : 1;
  }
  const definition = commands[name];
  if (!definition) return fail("unknown_command", `Unknown command "${name}".\n${usage()}`);

  let raw: Record<string, unknown>;
  try {
    const optionNames = Object.keys(definition.options.shape);
    raw = parseArgs({
      args: rest,
      options: Object.fromEntries([
        ...optionNames.map((option) => [
          option,
          isFlag(definition.options.shape[option])
            ? { type: "boolean" }
            : { type: "string", multiple: isRepeatable(definition.options.shape[option]) },
        ]),
        ["json", { type: "boolean" }],
      ]),
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    return fail("invalid_argument", `${(error as Error).message}\nUsage: npm run admin -- ${name} ${definition.usage}`);
  }
  delete raw.json;
  const parsed = definition.options.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const option = `--${issue.path.join(".")}`;
      return issue.code !== "custom" && raw[String(issue.path[0])] === undefined
        ? `${option} is required`
        : `${option}: ${issue.message}`;
    });
    return fail("invalid_argument", `${problems.join("; ")}.\nUsage: npm run admin -- ${name} ${definition.usage}`);
  }

  // Ctrl+C or a stop signal interrupts a transfer cleanly (an upload is aborted, nothing is recorded).
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => interruption.abort());
  let database: Awaited<ReturnType<typeof prepareDatabase>> | undefined;
  try {
    database = await prepareDatabase();
    const output = await definition.run(parsed.data as never);
    console.log(json ? JSON.stringify(output.json) : output.text);
    return 0;
  } catch (error) {
    if (error instanceof PartialFailure) {
      console.log(json ? JSON.stringify(error.output.json) : error.output.text);
      console.error(`error: ${error.message}`);
      return 1;
    }
    if (error instanceof AppError) {
      const code = fail(error.code, error.message);
      return error.code === "upload_interrupted" ? INTERRUPTED_EXIT_CODE : code;
    }
    return fail("internal_error", `Unexpected failure: ${(error as Error).message}`);
  } finally {
    await closeJobQueue();
    await closeEnginePool();
    await disconnectDb();
    await database?.stop();
  }
}

logToStderr();
await runMain(() => main(process.argv.slice(2)));
