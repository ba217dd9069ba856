import { promises as fs } from "node:fs";
import { z } from "zod";
import { findBuyerByEmail } from "../../lib/buyers";
import { AppError } from "../../lib/errors";
import { DESTINATION_TYPES, EXPORT_APPROVALS, EXPORT_FORMATS } from "../../lib/exports/config";
import { createDestination, findDestinationForOperator, testDestination } from "../../lib/exports/destinations";
import { exportNow, waitForRuns } from "../../lib/exports/run-now";
import { OPERATOR } from "../../lib/security/log";
import { assertReadableFile, command, PartialFailure, text, type Command } from "./command";

/** Export destinations set up for a buyer, tested and run. */

export const commands: Record<string, Command> = {
  "export:destination": command(
    z.object({
      email: text,
      name: text,
      type: z.enum(DESTINATION_TYPES),
      config: text,
      orders: text.optional(),
      format: z.enum(EXPORT_FORMATS).optional(),
      template: text.optional(),
      approval: z.enum(EXPORT_APPROVALS).optional(),
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
          approval: options.approval,
        },
        OPERATOR,
      );
      return { json: { id: destination.id }, text: `Created export destination ${destination.id} for ${buyer.email}` };
    },
  ),

  "export:test": command(z.object({ destination: text }), async (options) => {
    const destination = await findDestinationForOperator(options.destination);
    const result = await testDestination(destination, OPERATOR);
    const output = { json: result, text: `${result.ok ? "OK" : "FAILED"}: ${result.message}` };
    if (!result.ok) throw new PartialFailure(output);
    return output;
  }),

  "export:run": command(
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
