import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CallToolRequestSchema, ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { logger } from "../log";
import { sinceVersionValueSchema, versionValueSchema } from "../schemas/api";

/**
 * Arguments with the bounds of the API's parameters, defined once (lib/schemas/api.ts): outside
 * them the call is an invalid_request tool error before anything is read.
 */
export const versionArgument = versionValueSchema.describe("The table's version; the current one when not given.");
export const sinceVersionArgument = sinceVersionValueSchema.describe(
  "The last version you know; changes after it are answered (0 for everything kept).",
);

type ToolShape = Record<string, z.ZodType>;
type ToolConfig = { inputSchema?: ToolShape; outputSchema?: ToolShape };
type ToolCallback = (args: Record<string, unknown>) => CallToolResult | Promise<CallToolResult>;
type Registered = { input: z.ZodObject; output?: z.ZodObject; callback: ToolCallback };

/**
 * Registers the tools and makes the server check each call's arguments itself, so that wrong ones
 * are answered as every other refusal here is: a tool result with `isError` whose text is
 * `invalid_request: Invalid <argument>: <why>.`, the sentence /api/v1 gives for a bad query
 * parameter (lib/api/validation.ts). The SDK's own check answers "MCP error -32602: Input
 * validation error: ..." instead, a code no other answer of ours has. Tools are recorded as they
 * register (tools/list stays the SDK's, from the same schemas); the tools/call handler the SDK set
 * on the first registration is then replaced. The endpoint refuses unknown tool names before this.
 */
export function registerCheckedTools(server: McpServer, ...registrations: ((server: McpServer) => void)[]): void {
  const tools = new Map<string, Registered>();
  const register = server.registerTool.bind(server) as (name: string, config: ToolConfig, cb: ToolCallback) => unknown;
  const recording = Object.create(server) as McpServer;
  (recording as unknown as { registerTool: typeof register }).registerTool = (name, config, callback) => {
    tools.set(name, {
      input: z.object(config.inputSchema ?? {}),
      output: config.outputSchema ? z.object(config.outputSchema) : undefined,
      callback,
    });
    return register(name, config, callback);
  };
  for (const registration of registrations) registration(recording);
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = tools.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    const args = tool.input.safeParse(request.params.arguments ?? {});
    if (!args.success) return invalidArguments(args.error);
    const result = await tool.callback(args.data);
    if (!result.isError && tool.output && !tool.output.safeParse(result.structuredContent).success) {
      // Our own answer broke its promised shape: a defect, logged, and answered without internals.
      logger().error({ tool: request.params.name }, "mcp tool answer does not match its output schema");
      return { isError: true, content: [{ type: "text", text: "internal_error: The tool's answer was malformed." }] };
    }
    return result;
  });
}

function invalidArguments(error: z.ZodError): CallToolResult {
  const issue = error.issues[0];
  const name = issue?.path.join(".") || "arguments";
  const why =
    issue?.code === "invalid_type" && issue.message.endsWith("received undefined") ? "required" : issue?.message;
  return {
    isError: true,
    content: [{ type: "text", text: `invalid_request: Invalid ${name}: ${why ?? "bad value"}.` }],
  };
}
