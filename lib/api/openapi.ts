import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from "@asteasolutions/zod-to-openapi";
import type { ZodType } from "zod";
import {
  filePathSchema,
  listOrdersQuerySchema,
  orderPageSchema,
  orderPathSchema,
  orderSchema,
  problemSchema,
} from "../schemas/api";

type ErrorCase = { status: number; codes: string[] };

const AUTH_ERRORS: ErrorCase[] = [
  { status: 401, codes: ["missing_api_key", "invalid_api_key", "expired_api_key", "revoked_api_key"] },
  { status: 403, codes: ["insufficient_permission"] },
  { status: 429, codes: ["rate_limited"] },
  { status: 503, codes: ["service_unavailable"] },
];

const RATE_LIMIT_HEADERS = {
  "RateLimit-Policy": {
    description: 'The dataset limit, e.g. `"datasets";q=60;w=60`.',
    schema: { type: "string" as const },
  },
  RateLimit: { description: 'What is left of it, e.g. `"datasets";r=59;t=60`.', schema: { type: "string" as const } },
  "X-Request-Id": {
    description: "This request's id (an incoming valid one is echoed).",
    schema: { type: "string" as const },
  },
};

function responses(success: Record<string, ResponseConfig>, errors: ErrorCase[]): Record<string, ResponseConfig> {
  const problem = (codes: string[]): ResponseConfig => ({
    description: `Error codes: ${codes.map((code) => `\`${code}\``).join(", ")}.`,
    headers: RATE_LIMIT_HEADERS,
    content: { "application/problem+json": { schema: problemSchema } },
  });
  const byStatus = new Map<number, string[]>();
  for (const { status, codes } of [...errors, ...AUTH_ERRORS])
    byStatus.set(status, [...(byStatus.get(status) ?? []), ...codes]);
  return {
    ...success,
    ...Object.fromEntries([...byStatus].map(([status, codes]) => [String(status), problem(codes)])),
  };
}

const ok = (description: string, schema: ZodType): Record<string, ResponseConfig> => ({
  200: { description, headers: RATE_LIMIT_HEADERS, content: { "application/json": { schema } } },
});

/** The OpenAPI 3.1 document of /api/v1, generated from the zod schemas the handlers validate with. */
export function buildOpenApiDocument(serverUrl: string) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "apiKey", {
    type: "http",
    scheme: "bearer",
    description: "An API key from the dashboard: `Authorization: Bearer dak_...`. Keep it on your server.",
  });

  registry.registerPath({
    method: "get",
    path: "/orders",
    operationId: "listOrders",
    summary: "List paid orders, newest first",
    description: "Needs a `datasets:read` key. Continue with `offset=next_offset` until `next_offset` is null.",
    request: { query: listOrdersQuerySchema },
    responses: responses(ok("A page of orders.", orderPageSchema), [{ status: 400, codes: ["invalid_request"] }]),
  });
  registry.registerPath({
    method: "get",
    path: "/orders/{id}",
    operationId: "getOrder",
    summary: "Read one order with its files",
    request: { params: orderPathSchema },
    responses: responses(ok("The order.", orderSchema), [{ status: 404, codes: ["order_not_found"] }]),
  });
  registry.registerPath({
    method: "get",
    path: "/orders/{id}/files/{fileId}",
    operationId: "downloadFile",
    summary: "Download a delivered file",
    description:
      "Answers 302 to a signed URL valid for 5 minutes that needs no Authorization header (follow redirects, e.g. `curl -L`). " +
      "The signed URL serves the bytes with Content-Length, ETag (the sha256) and Range support, and refuses " +
      "tampered (403) or expired (410) links and orders no longer delivered (409).",
    request: { params: filePathSchema },
    responses: responses(
      { 302: { description: "Redirect to the signed download URL (Location header).", headers: RATE_LIMIT_HEADERS } },
      [
        { status: 404, codes: ["order_not_found", "file_not_found"] },
        { status: 409, codes: ["order_not_delivered"] },
      ],
    ),
  });

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Dataset Access API",
      version: "1.0.0",
      description:
        "Read-only access to your paid dataset orders and their delivered files. 60 requests per minute per " +
        "account across all its dataset keys. Errors are RFC 9457 problems with a stable `code`.",
    },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }],
  });
}
