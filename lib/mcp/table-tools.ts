import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { sqlIdentifier } from "../engine/engine";
import { MCP_ANSWER_MAX_BYTES, parsedRows } from "../explore/answer-json";
import { runOrderSql, type SqlAnswer } from "../explore/sql";
import { tableSchema } from "../schemas/api";
import { noticeSchema } from "../schemas/quality";
import { describeTable } from "../tables/description";
import { sinceVersionArgument } from "./arguments";
import { lines, textTable } from "./render";
import {
  limitInput,
  orderIdInput,
  READ_ONLY,
  tableInput,
  toolResult,
  type ToolAnswer,
  type ToolContext,
} from "./tool-kit";

/** The tools about a table's contents: describe_table, query, get_changes. */

/** At most this many rows per query or get_changes call (contract Part 7: limit <= 100). */
export const TOOL_ROW_LIMIT = 100;
const SQL_MAX_CHARACTERS = 8_000;

const changesSchema = z.object({ inserted: z.number().int(), updated: z.number().int(), deleted: z.number().int() });
const versionSummarySchema = z.object({
  version: z.number().int(),
  created_at: z.string(),
  rows: z.number().int(),
  changes: changesSchema.nullable().describe("What the version changed against the previous one."),
  quality_status: z.enum(["passed", "warned", "released"]),
});
const resultColumnSchema = z.object({ name: z.string(), type: z.string() });
const truncatedReasonSchema = z
  .enum(["rows", "bytes"])
  .optional()
  .describe("What cut the rows: `limit` (rows), or the answer's 256 KiB (bytes).");

/** What an answer's text takes at most (a text table of 20 rows and 12 columns of 40 characters, and its lines). */
const TEXT_RESERVE_BYTES = 16 * 1024;

/**
 * A query of a tool, its rows within the tool's answer budget less what the text beside them takes:
 * the engine cuts them as they stream (lib/engine/answer-rows.ts).
 */
function toolQuery(context: ToolContext, orderId: string, sql: string, limit: number): Promise<SqlAnswer> {
  return runOrderSql({
    buyerId: context.buyerId,
    orderId,
    sql,
    limit,
    via: { door: "mcp", ...context.lifetime },
    bytes: MCP_ANSWER_MAX_BYTES - TEXT_RESERVE_BYTES,
  });
}

/**
 * The tool's answer within MCP_ANSWER_MAX_BYTES, structured content and text together: rows left
 * out from the end (truncated, by bytes) while it is over, the text made again each time.
 */
function withinToolBudget<Output extends { rows: unknown[][]; truncated: boolean; truncated_reason?: string }>(
  structured: Output,
  text: (answer: Output) => string,
): ToolAnswer<Output> {
  let answer = { structured, text: text(structured) };
  while (
    answer.structured.rows.length > 0 &&
    Buffer.byteLength(JSON.stringify(answer.structured)) + Buffer.byteLength(answer.text) > MCP_ANSWER_MAX_BYTES
  ) {
    const rows = answer.structured.rows.slice(0, Math.floor(answer.structured.rows.length / 2));
    const cut = { ...answer.structured, rows, truncated: true, truncated_reason: "bytes" };
    answer = { structured: cut, text: text(cut) };
  }
  return answer;
}

export function registerTableTools(server: McpServer, context: ToolContext): void {
  server.registerTool(
    "describe_table",
    {
      title: "Describe a table",
      description:
        "What a table of an order holds: its columns and types, its row count, its key, its newest versions (each " +
        "with the rows it inserted, updated and deleted, and its quality status), the quality report of the current " +
        "version (null if none), the seller's notices of the last 90 days (schema changes, delays, deprecation), " +
        "the data dictionary (what the table and each column mean, units, examples) and its freshness (the promised " +
        "refresh cadence, when the next version is expected, whether it is late). Call it before query to learn the " +
        "column names.",
      inputSchema: { order_id: orderIdInput, table: tableInput },
      outputSchema: {
        table: tableSchema,
        versions: z.array(versionSummarySchema).describe("The newest versions, newest first (at most 20)."),
        version_count: z.number().int(),
        quality_report: z.record(z.string(), z.unknown()).nullable(),
        notices: z.array(noticeSchema),
      },
      annotations: { title: "Describe a table", ...READ_ONLY },
    },
    ({ order_id, table }) =>
      toolResult(context, async () => {
        const described = await describeTable(context.buyerId, order_id, table);
        const { name, version, rows, key, mode } = described.table;
        const { description, freshness } = described.table;
        const text = lines(
          `Table ${name} (${mode}${key ? `, key ${key.join(", ")}` : ""}): version ${version ?? "none"}, ${rows ?? 0} rows, ${described.version_count} version(s).`,
          description && `About it: ${description}`,
          freshness &&
            `Refreshed every ${freshness.every} (grace ${freshness.grace}); next version expected by ${freshness.expected_by ?? "its first version"}${freshness.late ? ": LATE" : ""}.`,
          `Query it as "${name}" (current version), "${name}@N" (version N) or "${name}@changes".`,
          "Columns:",
          textTable(
            ["column", "type", "nullable", "unit", "description"],
            (described.table.columns ?? []).map((column) => [
              column.name,
              column.type,
              column.nullable,
              column.unit,
              column.description,
            ]),
            200,
          ),
          "Versions:",
          textTable(
            ["version", "created_at", "rows", "inserted", "updated", "deleted", "quality"],
            described.versions.map((v) => [
              v.version,
              v.created_at,
              v.rows,
              v.changes?.inserted,
              v.changes?.updated,
              v.changes?.deleted,
              v.quality_status,
            ]),
          ),
          described.notices.length > 0 && "Notices:",
          described.notices.length > 0 &&
            textTable(
              ["type", "message", "effective_at"],
              described.notices.map((notice) => [notice.type, notice.message, notice.effective_at]),
            ),
          `Quality report: ${described.quality_report ? "in structuredContent.quality_report" : "none"}.`,
        );
        return { structured: described, text };
      }),
  );

  server.registerTool(
    "query",
    {
      title: "Query with SQL",
      description:
        "Runs one read-only SQL SELECT (DuckDB dialect) over an order's tables and answers at most `limit` rows. " +
        'Each table is a view by its name (current version); "name@3" is version 3 and "name@changes" every change ' +
        "row with _change_type and _commit_version. Call describe_table first for column names. Aggregate in SQL " +
        "(COUNT, GROUP BY) rather than reading many rows; truncated says more rows exist. Queries are limited to 10 s " +
        "and answers to 256 KiB (wide rows are cut sooner: truncated_reason says why).",
      inputSchema: {
        order_id: orderIdInput,
        sql: z.string().min(1).max(SQL_MAX_CHARACTERS).describe("One SELECT or WITH ... SELECT statement."),
        limit: limitInput(TOOL_ROW_LIMIT, TOOL_ROW_LIMIT, "Rows answered"),
      },
      outputSchema: {
        columns: z.array(resultColumnSchema),
        rows: z.array(z.array(z.unknown())),
        truncated: z.boolean(),
        truncated_reason: truncatedReasonSchema,
      },
      annotations: { title: "Query with SQL", ...READ_ONLY },
    },
    ({ order_id, sql, limit }) =>
      toolResult(context, async () => {
        const { columns, truncated, truncated_reason, ...answer } = await toolQuery(context, order_id, sql, limit);
        const structured = {
          columns,
          rows: parsedRows(answer),
          truncated,
          ...(truncated_reason && { truncated_reason }),
        };
        return withinToolBudget(structured, (shown) =>
          lines(
            `${shown.rows.length} row(s)${shown.truncated ? ` (more exist${shown.truncated_reason === "bytes" ? ", cut at 256 KiB: choose fewer columns" : ""}: aggregate, filter or raise limit up to ${TOOL_ROW_LIMIT})` : ""}.`,
            textTable(
              columns.map((column) => column.name),
              shown.rows,
            ),
          ),
        );
      }),
  );

  server.registerTool(
    "get_changes",
    {
      title: "Get a table's changes",
      description:
        "What changed in a table after a version you already know: for each newer version the counts of inserted, " +
        "updated and deleted rows, and the change rows themselves (the table's columns plus _change_type: insert, " +
        "delete, update_preimage, update_postimage; and _commit_version), oldest first, at most `limit` rows. " +
        "Use since_version=0 for everything kept.",
      inputSchema: {
        order_id: orderIdInput,
        table: tableInput,
        since_version: sinceVersionArgument,
        limit: limitInput(TOOL_ROW_LIMIT, TOOL_ROW_LIMIT, "Change rows answered"),
      },
      outputSchema: {
        current_version: z.number().int().nullable(),
        versions: z.array(versionSummarySchema.pick({ version: true, created_at: true, rows: true, changes: true })),
        columns: z.array(resultColumnSchema),
        rows: z.array(z.array(z.unknown())),
        truncated: z.boolean().describe("More change rows exist than were answered."),
        truncated_reason: truncatedReasonSchema,
      },
      annotations: { title: "Get a table's changes", ...READ_ONLY },
    },
    ({ order_id, table, since_version, limit }) =>
      toolResult(context, async () => {
        const described = await describeTable(context.buyerId, order_id, table, {
          sinceVersion: since_version,
          versions: TOOL_ROW_LIMIT,
        });
        // The change view lists each version's change file in version order, each in its own order (an
        // update's pre-image just before its post-image): no ORDER BY, which would not keep that order.
        const rows = await toolQuery(
          context,
          order_id,
          `SELECT * FROM ${sqlIdentifier(`${table}@changes`)} WHERE _commit_version > ${since_version}`,
          limit,
        );
        const versions = described.versions.map(({ version, created_at, rows: count, changes }) => ({
          version,
          created_at,
          rows: count,
          changes,
        }));
        const text = ({ rows: answered, truncated }: { rows: unknown[][]; truncated: boolean }) =>
          lines(
            `Table ${table}: version ${described.table.version ?? "none"} now; ${versions.length} version(s) after ${since_version}.`,
            versions.length > 0 &&
              textTable(
                ["version", "created_at", "inserted", "updated", "deleted"],
                versions.map((v) => [
                  v.version,
                  v.created_at,
                  v.changes?.inserted,
                  v.changes?.updated,
                  v.changes?.deleted,
                ]),
              ),
            answered.length > 0 && `Change rows${truncated ? ` (first ${limit})` : ""}:`,
            answered.length > 0 &&
              textTable(
                rows.columns.map((column) => column.name),
                answered,
              ),
          );
        return withinToolBudget(
          {
            current_version: described.table.version,
            versions,
            columns: rows.columns,
            rows: parsedRows(rows),
            truncated: rows.truncated,
            ...(rows.truncated_reason && { truncated_reason: rows.truncated_reason }),
          },
          text,
        );
      }),
  );
}
