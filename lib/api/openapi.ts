import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from "@asteasolutions/zod-to-openapi";
import type { ZodType } from "zod";
import { DATASETS_RATE_LIMIT, DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import {
  downloadQuerySchema,
  filePathSchema,
  listOrdersQuerySchema,
  orderPageSchema,
  orderPathSchema,
  orderSchema,
  previewQuerySchema,
  previewSchema,
  problemSchema,
  socialPathSchema,
  socialProfileQuerySchema,
  socialProfileSchema,
} from "../schemas/api";
import { API_ERRORS, type ApiErrorCode } from "./problem";

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
    responses: responses(ok("A page of orders.", orderPageSchema), ["invalid_request"]),
  });
  registry.registerPath({
    method: "get",
    path: "/orders/{id}",
    operationId: "getOrder",
    summary: "Read one order with its files",
    request: { params: orderPathSchema },
    responses: responses(ok("The order.", orderSchema), ["order_not_found"]),
  });
  registry.registerPath({
    method: "get",
    path: "/orders/{id}/files/{fileId}",
    operationId: "downloadFile",
    summary: "Download a delivered file",
    description:
      `Answers 302 to a signed URL valid for ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes that needs no Authorization header (follow redirects, e.g. \`curl -L\`). ` +
      "The signed URL serves the bytes with Content-Length, ETag (the sha256) and Range support, and refuses " +
      "tampered (403) or expired (410) links and orders no longer delivered (409). " +
      "Where the server stores files in S3-compatible object storage, the redirect goes straight to a presigned URL of " +
      "the store (same lifetime, same Content-Disposition and type; Range and ETag are the store's, and the ETag is " +
      "then the store's, not the sha256). That URL is signed for GET only: HEAD works on the server's own links " +
      "(local storage), not on a presigned URL.",
    request: { params: filePathSchema, query: downloadQuerySchema },
    responses: responses(
      {
        302: { description: "Redirect to the signed download URL (Location header).", headers: RATE_LIMIT_HEADERS },
        202: {
          description:
            "`?format=` asked for a rendition that is being made (code `rendition_pending`): ask again after Retry-After seconds.",
          headers: {
            ...RATE_LIMIT_HEADERS,
            "Retry-After": { description: "Seconds to wait.", schema: { type: "string" } },
          },
          content: { "application/problem+json": { schema: problemSchema } },
        },
      },
      ["invalid_request", "order_not_found", "file_not_found", "preview_not_available", "order_not_delivered"],
    ),
  });
  registry.registerPath({
    method: "get",
    path: "/orders/{id}/files/{fileId}/preview",
    operationId: "previewFile",
    summary: "Read the first rows of a data file",
    description:
      "The columns and first rows of a CSV, TSV, JSON, JSON Lines or Parquet file (gzip-compressed text too), as profiled " +
      "after delivery, and its row count. Same checks as the download; binary files and files whose profile failed " +
      "or is not done yet answer 404 `preview_not_available`.",
    request: { params: filePathSchema, query: previewQuerySchema },
    responses: responses(ok("The first rows.", previewSchema), [
      "invalid_request",
      "order_not_found",
      "file_not_found",
      "preview_not_available",
      "order_not_delivered",
    ]),
  });

  const allowanceHeader = (description: string) => ({ description, schema: { type: "string" as const } });
  registry.registerPath({
    method: "get",
    path: "/scrape/{platform}/profile",
    operationId: "getSocialProfile",
    summary: "Read a social profile (Social API)",
    description:
      "Needs a `scrape:read` key of an account with Social API access. Every request counts toward the account's " +
      "rate per minute (`RateLimit` headers, policy `social`); each profile returned uses one read of the monthly " +
      "allowance (calendar month, UTC), told by the `Social-Allowance-*` headers.",
    request: { params: socialPathSchema, query: socialProfileQuerySchema },
    responses: responses(
      {
        200: {
          description: "The stored profile.",
          headers: {
            ...RATE_LIMIT_HEADERS,
            "Social-Allowance-Limit": allowanceHeader("Profile reads allowed this month."),
            "Social-Allowance-Remaining": allowanceHeader("Profile reads left this month."),
            "Social-Allowance-Reset": allowanceHeader("When the allowance resets (ISO 8601, start of next month UTC)."),
          },
          content: { "application/json": { schema: socialProfileSchema } },
        },
      },
      [
        "invalid_request",
        "social_access_disabled",
        "platform_not_supported",
        "profile_not_found",
        "social_allowance_exhausted",
        "social_unavailable",
      ],
    ),
  });

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
