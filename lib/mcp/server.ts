import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { registerCheckedTools } from "./arguments";
import { registerOrderTools } from "./order-tools";
import { registerTableTools } from "./table-tools";
import type { ToolContext } from "./tool-kit";

/** The protocol versions this server speaks (contract Part 7); the newest is answered to any other. */
export const MCP_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18"] as const;

/** The tools, by name: a call to any other is a JSON-RPC error (lib/mcp/endpoint.ts). */
export const MCP_TOOL_NAMES = [
  "list_orders",
  "get_order",
  "describe_table",
  "query",
  "get_changes",
  "download_link",
] as const;

const INSTRUCTIONS =
  "Dataset Access: the datasets this account bought. Start with list_orders, then get_order or describe_table; " +
  "answer questions with query (SQL over the order's tables) rather than downloading; get_changes tells what a " +
  "refresh changed; download_link gives short-lived links for people or programs. Everything is read-only and " +
  "limited to this account's own orders.";

/**
 * The MCP server for one request: made per HTTP request (the endpoint is stateless, so any
 * instance answers any request), its tools bound to the key's buyer.
 */
export function mcpServerFor(context: ToolContext): McpServer {
  const server = new McpServer(
    { name: "dataset-access", title: "Dataset Access", version: "1.0.0" },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  registerCheckedTools(
    server,
    (tools) => registerOrderTools(tools, context),
    (tools) => registerTableTools(tools, context),
  );
  return server;
}
