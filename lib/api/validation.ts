import type { z } from "zod";
import { AppError } from "../errors";

/** Parses a request's query string with its schema; the first problem becomes a 400 invalid_request. */
export function parseQuery<Schema extends z.ZodType>(schema: Schema, request: { url: string }): z.infer<Schema> {
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

/** Parses one path value with its schema; a malformed one becomes a 400 invalid_request naming it. */
export function parseValue<Schema extends z.ZodType>(schema: Schema, value: string, name: string): z.infer<Schema> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new AppError("invalid_request", `Invalid ${name}: ${result.error.issues[0]?.message ?? "bad value"}.`);
  }
  return result.data;
}
