import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { AppError, inputMessage } from "../errors";
import { unexpectedError } from "../http/unexpected-error";
import { isTypedId } from "../ids";

/**
 * Who a tool acts for: the key's buyer (every read is scoped by it) and the site's public origin, for
 * links; the HTTP request's lifetime, so a query whose client left is cancelled (lib/http/node.ts).
 */
export type ToolContext = {
  buyerId: string;
  origin: string;
  requestId: string;
  lifetime?: { signal: AbortSignal; answered: Promise<unknown> };
};

/** What a tool answers: its structured content (checked against its output schema) and the text an agent reads. */
export type ToolAnswer<Output> = { structured: Output; text: string };

/**
 * Runs a tool and makes its answer a CallToolResult. An error is a tool result with `isError:
 * true` whose text starts with the problem's code (`order_not_found: No order ...`), so a model
 * reads why and a program can match the code; anything unexpected is logged and answered
 * without internals, as the API's problem+json would (lib/http/unexpected-error.ts).
 */
export async function toolResult<Output extends Record<string, unknown>>(
  context: ToolContext,
  run: () => Promise<ToolAnswer<Output>>,
): Promise<CallToolResult> {
  try {
    const { structured, text } = await run();
    return { structuredContent: structured, content: [{ type: "text", text }] };
  } catch (error) {
    const { code, detail } = problemOf(error, context.requestId);
    return { isError: true, content: [{ type: "text", text: `${code}: ${detail}` }] };
  }
}

function problemOf(error: unknown, requestId: string): { code: string; detail: string } {
  // The query tool's SQL is its argument `sql` (lib/errors.ts inputMessage).
  if (error instanceof AppError) return { code: error.code, detail: inputMessage(error, { sql: "sql" }) };
  const unexpected = unexpectedError(error, requestId);
  return {
    code: unexpected.kind === "unavailable" ? "service_unavailable" : "internal_error",
    detail: unexpected.message,
  };
}

/** The annotations of every tool here: it reads the buyer's own data and changes nothing. */
export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** An order id argument; its shape is checked by the reads (a malformed id is an order_not_found). */
export const orderIdInput = z
  .string()
  .max(100)
  .describe("The order's id, `ord_` and 32 hex digits, as list_orders gives it.");

export const tableInput = z
  .string()
  .max(100)
  .describe("The table's name within the order, as get_order or describe_table gives it, e.g. `products`.");

/** A limit argument: 1..max, `fallback` when not given. */
export function limitInput(max: number, fallback: number, what: string) {
  return z
    .number()
    .int()
    .min(1)
    .max(max)
    .default(fallback)
    .describe(`${what}, 1 to ${max}; ${fallback} when not given.`);
}

/** A file id argument checked for its shape, so a typo reads as the file it does not name. */
export function fileIdOf(orderId: string, fileId: string): string {
  if (!isTypedId("fil", fileId)) {
    throw new AppError(
      "file_not_found",
      `Order ${orderId} has no file ${JSON.stringify(String(fileId).slice(0, 70))}.`,
    );
  }
  return fileId;
}
