import path from "node:path";
import { z } from "zod";
import { createBuyer, findBuyerByEmail } from "../../lib/buyers";
import { profileFiles } from "../../lib/datasets/profile";
import { AppError } from "../../lib/errors";
import {
  addOrderFile,
  createOrder,
  findOrderForOperator,
  registerStoredObject,
  setOrderStatus,
} from "../../lib/operator/orders";
import { orderStatusSchema } from "../../lib/schemas/order-status";
import {
  assertReadableFile,
  command,
  interruption,
  PartialFailure,
  readableFile,
  text,
  type Command,
  type Output,
} from "./command";

/** Buyers, orders and their files. */

type AddedFile = Awaited<ReturnType<typeof addOrderFile>>;

const fileJson = (file: AddedFile) => ({
  id: file.id,
  name: file.name,
  size: file.size,
  sha256: file.sha256,
  content_type: file.contentType,
  table: file.table,
});

const fileLine = (file: AddedFile) =>
  `Added file ${file.id} "${file.name}" (${file.size} bytes, ${file.contentType}, sha256 ${file.sha256})` +
  (file.table ? `, published to table ${file.table}` : "");

/** Several files in one order: `{files: [...]}` (one path keeps the contract's single object). */
const filesOutput = (files: AddedFile[]): Output => ({
  json: { files: files.map(fileJson) },
  text: files.map(fileLine).join("\n"),
});

/**
 * Adds the files at `paths` one after another in this one process (one connection pool, one engine pool), each
 * stored and profiled as a single add is. Every path is checked first, so a missing one adds nothing.
 */
async function addFiles(options: { order: string; path: string[]; "content-type"?: string }): Promise<Output> {
  const byName = new Map<string, string>();
  for (const filePath of options.path) {
    await assertReadableFile(filePath);
    const name = path.basename(filePath);
    const earlier = byName.get(name);
    if (earlier !== undefined)
      throw new AppError(
        "invalid_argument",
        `${earlier} and ${filePath} would both be named "${name}" in the order: add one of them separately with --name.`,
      );
    byName.set(name, filePath);
  }
  await findOrderForOperator(options.order);
  const added: AddedFile[] = [];
  for (const filePath of options.path) {
    try {
      added.push(
        await addOrderFile({
          orderId: options.order,
          contentType: options["content-type"],
          source: readableFile(filePath),
          signal: interruption.signal,
        }),
      );
    } catch (error) {
      if (added.length === 0) throw error;
      // The files before it stay added: say which, and why this one was not.
      const reason = error instanceof Error ? error.message : String(error);
      throw new PartialFailure(
        filesOutput(added),
        `${filePath} was not added (${reason}); the ${added.length} file(s) before it were, the rest were not tried.`,
      );
    }
  }
  return filesOutput(added);
}

export const commands: Record<string, Command> = {
  "buyer:create": command(z.object({ email: text }), async ({ email }) => {
    const buyer = await createBuyer(email);
    return {
      json: { id: buyer.id, email: buyer.email, created: buyer.created },
      text: `${buyer.created ? "Created" : "Already existed:"} buyer ${buyer.id} <${buyer.email}>`,
    };
  }),

  "order:create": command(
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
    z
      .object({
        order: text,
        path: z.array(text).optional(),
        from: text.optional(),
        name: text.optional(),
        "content-type": text.optional(),
        table: text.optional(),
      })
      .refine((options) => (options.path === undefined) !== (options.from === undefined), {
        message: "give exactly one of --path FILE or --from s3://BUCKET/KEY",
        path: ["path"],
      })
      .refine((options) => (options.path?.length ?? 1) === 1 || options.name === undefined, {
        message: "--name names one file: give it with a single --path (the files of several paths keep their names)",
        path: ["name"],
      })
      .refine((options) => (options.path?.length ?? 1) === 1 || options.table === undefined, {
        message:
          "--table makes a file the next version of one table: give it with a single --path (table:publish publishes a version of several parts)",
        path: ["table"],
      }),
    async (options) => {
      if (options.path !== undefined && options.path.length > 1) return addFiles({ ...options, path: options.path });
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
        const filePath = options.path![0]!;
        await assertReadableFile(filePath);
        file = await addOrderFile({ ...input, source: readableFile(filePath), signal: interruption.signal });
      }
      return { json: fileJson(file), text: fileLine(file) };
    },
  ),

  "files:profile": command(
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

  "order:set-status": command(z.object({ order: text, status: orderStatusSchema }), async ({ order, status }) => {
    const updated = await setOrderStatus(order, status);
    return {
      json: { id: updated.id, status: updated.status, delivered_at: updated.deliveredAt?.toISOString() ?? null },
      text: `Order ${updated.id} is now ${updated.status}`,
    };
  }),
};
