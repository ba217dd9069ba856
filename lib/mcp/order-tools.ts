import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { DOWNLOAD_LINK_TTL_SECONDS, ORDER_PAGE_SIZE } from "../contract";
import { RENDITION_FORMATS } from "../data-formats";
import { downloadTargetFor } from "../datasets/access";
import { downloadUrl } from "../downloads/links";
import { AppError } from "../errors";
import { getOrder, orderPage } from "../orders/queries";
import { orderSchema, type versionSchema } from "../schemas/api";
import { orderStatusSchema } from "../schemas/order-status";
import { tableJson, versionJson } from "../tables/queries";
import { versionArgument } from "./arguments";
import { lines, textTable } from "./render";
import { fileIdOf, limitInput, orderIdInput, READ_ONLY, tableInput, toolResult, type ToolContext } from "./tool-kit";

/** The tools about orders and their files: list_orders, get_order, download_link. */

const orderSummarySchema = z.object({
  id: z.string(),
  name: z.string(),
  status: orderStatusSchema,
  paid_at: z.string(),
  delivered_at: z.string().nullable(),
  downloadable: z.boolean(),
  files: z.number().int().describe("How many files the order lists."),
  tables: z.array(
    z.object({ name: z.string(), version: z.number().int().nullable(), rows: z.number().int().nullable() }),
  ),
});

const linkSchema = z.object({ file_id: z.string(), name: z.string(), url: z.string() });

export function registerOrderTools(server: McpServer, context: ToolContext): void {
  server.registerTool(
    "list_orders",
    {
      title: "List orders",
      description:
        "Lists the datasets this account has bought (its orders), newest first: each order's id, name, status, " +
        "how many files it has and its tables (named datasets refreshed as versions). Call this first: every other " +
        "tool takes an order_id from here. Only orders with status `delivered` can be downloaded. Page with " +
        "offset=next_offset until next_offset is null.",
      inputSchema: {
        limit: limitInput(ORDER_PAGE_SIZE.max, ORDER_PAGE_SIZE.default, "Orders per page"),
        offset: z
          .number()
          .int()
          .min(0)
          .default(0)
          .describe("Position of the first order: 0, or the previous next_offset."),
      },
      outputSchema: { orders: z.array(orderSummarySchema), next_offset: z.number().int().nullable() },
      annotations: { title: "List orders", ...READ_ONLY },
    },
    ({ limit, offset }) =>
      toolResult(context, async () => {
        const page = await orderPage(context.buyerId, { limit, offset });
        const orders = page.data.map((order) => ({
          id: order.id,
          name: order.name,
          status: order.status,
          paid_at: order.paid_at,
          delivered_at: order.delivered_at,
          downloadable: order.downloadable,
          files: order.files.length,
          tables: order.tables.map(({ name, version, rows }) => ({ name, version, rows })),
        }));
        const text = lines(
          `${orders.length} order(s)${page.next_offset === null ? "" : `; more with offset=${page.next_offset}`}.`,
          orders.length > 0 &&
            textTable(
              ["order_id", "name", "status", "paid_at", "files", "tables"],
              orders.map((order) => [
                order.id,
                order.name,
                order.status,
                order.paid_at,
                order.files,
                order.tables.map((table) => table.name).join(", "),
              ]),
            ),
        );
        return { structured: { orders, next_offset: page.next_offset }, text };
      }),
  );

  server.registerTool(
    "get_order",
    {
      title: "Get an order",
      description:
        "One order with all its files (id, name, size, format, rows, columns) and its tables (name, current version, " +
        "rows, columns). Use it to see what an order holds before describe_table, query or download_link.",
      inputSchema: { order_id: orderIdInput },
      outputSchema: orderSchema.shape,
      annotations: { title: "Get an order", ...READ_ONLY },
    },
    ({ order_id }) =>
      toolResult(context, async () => {
        const order = await getOrder(context.buyerId, order_id);
        const text = lines(
          `Order ${order.id} "${order.name}": ${order.status}, paid ${order.paid_at}.`,
          order.tables.length > 0 && "Tables:",
          order.tables.length > 0 &&
            textTable(
              ["table", "mode", "version", "rows", "columns", "updated_at"],
              order.tables.map((table) => [
                table.name,
                table.mode,
                table.version,
                table.rows,
                table.columns?.length ?? null,
                table.updated_at,
              ]),
            ),
          "Files:",
          textTable(
            ["file_id", "name", "size", "format", "rows", "table"],
            order.files.map((file) => [
              file.id,
              file.name,
              file.size,
              file.format,
              file.rows,
              file.table ? `${file.table.name}@${file.table.version}` : null,
            ]),
          ),
        );
        return { structured: order, text };
      }),
  );

  server.registerTool(
    "download_link",
    {
      title: "Get download links",
      description:
        `Signed HTTPS links to download files of a delivered order, valid ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes and usable ` +
        "without any key (give them to a person or a program; do not fetch large files yourself). Give either file_id " +
        "(from get_order), or table (and optionally version, default the current one) for every part of that " +
        "version. format asks for the file as Parquet, CSV or JSON Lines instead of its own format.",
      inputSchema: {
        order_id: orderIdInput,
        file_id: z.string().max(100).optional().describe("A file's id (`fil_...`) from get_order."),
        table: tableInput.optional(),
        version: versionArgument.optional(),
        format: z
          .enum(RENDITION_FORMATS)
          .optional()
          .describe("parquet, csv or jsonl; the file's own format when not given."),
      },
      outputSchema: { expires_at: z.string(), links: z.array(linkSchema) },
      annotations: { title: "Get download links", ...READ_ONLY },
    },
    ({ order_id, file_id, table, version, format }) =>
      toolResult(context, async () => {
        if ((file_id === undefined) === (table === undefined)) {
          throw new AppError("invalid_request", "Give either file_id, or table (with an optional version); not both.");
        }
        if (version !== undefined && table === undefined) {
          throw new AppError("invalid_request", "version goes with table.");
        }
        const fileIds =
          file_id !== undefined ? [fileIdOf(order_id, file_id)] : await partIds(context, order_id, table!, version);
        const expiresAt = new Date(Date.now() + DOWNLOAD_LINK_TTL_SECONDS * 1000).toISOString();
        const links = [];
        for (const id of fileIds) {
          const target = await downloadTargetFor(context.buyerId, order_id, id, format);
          links.push({ file_id: id, name: target.name, url: await downloadUrl(target, context.origin) });
        }
        const text = lines(
          `${links.length} link(s), valid until ${expiresAt}; they need no key.`,
          ...links.map((link) => `${link.name}: ${link.url}`),
        );
        return { structured: { expires_at: expiresAt, links }, text };
      }),
  );
}

/** The parts of a table's version (the current one when not given). */
async function partIds(context: ToolContext, orderId: string, table: string, version?: number): Promise<string[]> {
  const number =
    version ?? (JSON.parse(await tableJson(context.buyerId, orderId, table)) as { version: number | null }).version;
  if (number === null) throw new AppError("version_not_found", `Table ${table} has no version yet.`);
  const found = JSON.parse(await versionJson(context.buyerId, orderId, table, number)) as z.infer<typeof versionSchema>;
  return found.files.map((file) => file.id);
}
