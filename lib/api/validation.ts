import type { z } from "zod";
import { AppError } from "../errors";

/** Parses a request's query string with its schema; the first problem becomes a 400 invalid_request. */
export function parseQuery<Schema extends z.ZodType>(schema: Schema, request: Request): z.infer<Schema> {
  const params = new URL(request.url).searchParams;
  // A repeated parameter is ambiguous; the first occurrence counts.
  const result = schema.safeParse(Object.fromEntries([...new Set(params.keys())].map((key) => [key, params.get(key)])));
  if (!result.success) {
    const issue = result.error.issues[0];
    const name = issue?.path.join(".") || "query";
    throw new AppError("invalid_request", `Invalid ${name}: ${issue?.message ?? "bad value"}.`);
  }
  return result.data;
}

/** APP_URL without trailing slashes, or "" when it is not set. */
export function configuredOrigin(): string {
  return (process.env.APP_URL ?? "").replace(/\/+$/, "");
}

/**
 * The public origin for absolute links: APP_URL (set it in production), else the host the
 * client addressed. Not request.url: under `next start` its host is the server's own name.
 */
export function publicOrigin(request: Pick<Request, "headers" | "url">): string {
  const configured = configuredOrigin();
  if (configured) return configured;
  const url = new URL(request.url);
  const host = request.headers.get("x-forwarded-host") ?? request.headers.get("host") ?? url.host;
  const protocol = request.headers.get("x-forwarded-proto") ?? url.protocol.replace(/:$/, "");
  return `${protocol.split(",")[0]!.trim()}://${host.split(",")[0]!.trim()}`;
}
