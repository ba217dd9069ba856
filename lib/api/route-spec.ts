import type { z } from "zod";
import type { RouteRequest } from "../http/node";
import type { ApiErrorCode } from "../http/problem";
import type { ApiKeyPermission } from "../keys/permissions";
import type { ApiContext } from "./pipeline";

/** The shape of an entry of the route table (lib/api/routes.ts), apart from the table itself. */

type PathParams<P> = P extends z.ZodObject ? { [K in keyof z.input<P>]: string } : Record<string, never>;
type QueryOf<Q> = Q extends z.ZodType ? z.output<Q> : Record<string, never>;

/**
 * What the route answers when it succeeds: JSON (200; `yaml`: YAML by default, the same document) or a redirect
 * to a signed URL (302, or 202 while being made).
 */
export type RouteAnswer =
  | { json: z.ZodType; description: string; headers?: Record<string, string>; yaml?: true }
  | { redirect: string; pending?: string };

type RouteSpec<P, Q, Permission> = {
  operationId: string;
  path: `/${string}`;
  permission: Permission;
  keyInFirstRead?: boolean;
  summary: string;
  description?: string;
  params?: P;
  query?: Q;
  answer: RouteAnswer;
  errors: ApiErrorCode[];
  /** Served but left out of the OpenAPI document (the document itself). */
  undocumented?: true;
  handler: (
    context: Permission extends "public"
      ? { request: RouteRequest; requestId: string; params: PathParams<P>; query: () => QueryOf<Q> }
      : ApiContext<PathParams<P>> & { query: () => QueryOf<Q> },
  ) => Promise<Response>;
};

/** An entry of the table, its types erased once checked. */
export type ApiRoute = Omit<RouteSpec<z.ZodObject | undefined, z.ZodType | undefined, string>, "handler"> & {
  permission: ApiKeyPermission | "public";
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each entry's handler was checked against its own schemas
  handler: (context: any) => Promise<Response>;
};

/** One entry, checked against its own schemas. */
export function route<
  P extends z.ZodObject | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  Permission extends ApiKeyPermission | "public" = ApiKeyPermission | "public",
>(spec: RouteSpec<P, Q, Permission>): ApiRoute {
  return spec as unknown as ApiRoute;
}
