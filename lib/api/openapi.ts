import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from "@asteasolutions/zod-to-openapi";
import type { ZodObject, ZodType } from "zod";
import { DATASETS_RATE_LIMIT } from "../contract";
import { problemSchema } from "../schemas/api";
import { API_ERRORS, type ApiErrorCode } from "../http/problem";
import type { ApiRoute, RouteAnswer } from "./route-spec";

/** What every keyed route may answer besides its own errors. */
const KEYED_ROUTE_ERRORS: ApiErrorCode[] = [
  "missing_api_key",
  "invalid_api_key",
  "expired_api_key",
  "revoked_api_key",
  "insufficient_permission",
  "rate_limited",
  "service_unavailable",
];

const RATE_LIMIT_HEADERS = {
  "RateLimit-Policy": {
    description: `The limit, e.g. \`"datasets";q=${DATASETS_RATE_LIMIT.limit};w=${DATASETS_RATE_LIMIT.windowSeconds}\`.`,
    schema: { type: "string" as const },
  },
  RateLimit: {
    description: `What is left of it, e.g. \`"datasets";r=${DATASETS_RATE_LIMIT.limit - 1};t=${DATASETS_RATE_LIMIT.windowSeconds}\`.`,
    schema: { type: "string" as const },
  },
  "X-Request-Id": {
    description: "This request's id (an incoming valid one is echoed).",
    schema: { type: "string" as const },
  },
};

/** The route's success responses, plus one problem response per status of its error codes (statuses from API_ERRORS). */
function responses(success: Record<string, ResponseConfig>, codes: ApiErrorCode[]): Record<string, ResponseConfig> {
  const byStatus = new Map<number, ApiErrorCode[]>();
  for (const code of [...codes, ...KEYED_ROUTE_ERRORS]) {
    const { status } = API_ERRORS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const problem = (statusCodes: ApiErrorCode[]): ResponseConfig => ({
    description: `Error codes: ${statusCodes.map((code) => `\`${code}\``).join(", ")}.`,
    headers: RATE_LIMIT_HEADERS,
    content: { "application/problem+json": { schema: problemSchema } },
  });
  return {
    ...success,
    ...Object.fromEntries([...byStatus].map(([status, statusCodes]) => [String(status), problem(statusCodes)])),
  };
}

const textHeader = (description: string) => ({ description, schema: { type: "string" as const } });

/** A route's success responses, from its entry's answer. */
function success(answer: RouteAnswer): Record<string, ResponseConfig> {
  if ("json" in answer) {
    const extra = Object.fromEntries(
      Object.entries(answer.headers ?? {}).map(([name, text]) => [name, textHeader(text)]),
    );
    return {
      200: {
        description: answer.description,
        headers: { ...RATE_LIMIT_HEADERS, ...extra },
        content: {
          ...(answer.yaml ? { "application/yaml": { schema: answer.json as ZodType } } : {}),
          "application/json": { schema: answer.json as ZodType },
        },
      },
    };
  }
  return {
    302: { description: answer.redirect, headers: RATE_LIMIT_HEADERS },
    ...(answer.pending
      ? {
          202: {
            description: answer.pending,
            headers: { ...RATE_LIMIT_HEADERS, "Retry-After": textHeader("Seconds to wait.") },
            content: { "application/problem+json": { schema: problemSchema } },
          },
        }
      : {}),
  };
}

/**
 * The OpenAPI 3.1 document of /api/v1, generated from the route table (lib/api/routes.ts): its paths
 * and the zod schemas the handlers validate with.
 */
export function buildOpenApiDocument(serverUrl: string, routes: readonly ApiRoute[]) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "apiKey", {
    type: "http",
    scheme: "bearer",
    description: "An API key from the dashboard: `Authorization: Bearer dak_...`. Keep it on your server.",
  });

  for (const entry of routes) {
    if (entry.undocumented) continue;
    registry.registerPath({
      method: "get",
      path: entry.path,
      operationId: entry.operationId,
      summary: entry.summary,
      ...(entry.description ? { description: entry.description } : {}),
      request: {
        ...(entry.params ? { params: entry.params } : {}),
        ...(entry.query ? { query: entry.query as ZodObject } : {}),
      },
      responses: responses(success(entry.answer), entry.errors),
    });
  }

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Dataset Access API",
      version: "1.0.0",
      description:
        `Read-only access to your paid dataset orders and their delivered files (\`datasets:read\` keys, ${DATASETS_RATE_LIMIT.limit} requests ` +
        `per ${DATASETS_RATE_LIMIT.windowSeconds} seconds per account across all its dataset keys), and, for accounts with Social API access, to stored ` +
        "social profiles (`scrape:read` keys). Errors are RFC 9457 problems with a stable `code`.",
    },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }],
  });
}
