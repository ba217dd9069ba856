import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  RequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/**
 * What the SDK's schema of a request's method refuses in its params, as a short sentence, or
 * undefined. The SDK answers such params with -32603 "Internal error" and its schema's validation
 * dump (an `initialize` with `{}`, a `tools/list` cursor that is a number, `_meta` that is no
 * object); ./endpoint.ts answers -32602 with this sentence instead. A method this server does not
 * answer is checked by the params every request shares (`_meta`).
 */
export function paramsIssue(method: string, params: unknown): string | undefined {
  const schema: RequestCheck = REQUEST_SCHEMAS[method] ?? RequestSchema;
  const parsed = schema.safeParse(params === undefined ? { method } : { method, params });
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0]!;
  const where = ["params", ...issue.path.slice(1).map(String)].join(".");
  const typed = /^Invalid input: expected (\w+), received (\w+)$/.exec(issue.message);
  if (typed?.[2] === "undefined") return `${where} is missing (${article(typed[1]!)})`;
  if (typed) return `${where} must be ${article(typed[1]!)}, not ${article(typed[2]!)}`;
  return `${where}: ${issue.message.split("\n")[0]!.slice(0, 200)}`;
}

/** A schema's check, as these use it. */
type RequestCheck = {
  safeParse(value: unknown): { success: true } | { success: false; error: { issues: Issue[] } };
};
type Issue = { path: PropertyKey[]; message: string };

/** The requests this server answers (lib/mcp/server.ts), by method. */
const REQUEST_SCHEMAS: Record<string, RequestCheck> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  "tools/list": ListToolsRequestSchema,
  "tools/call": CallToolRequestSchema,
};

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);
