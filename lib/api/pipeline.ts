import type { AuthenticatedKey } from "../keys/verify";
import type { ApiKeyPermission } from "../keys/permissions";
import type { SqlRunner } from "../db/client";
import type { SocialAccessSettings } from "../social/access";
import { keyedRequest } from "../http/keyed-request";
import { readOnlyNodeRoute, type RouteRequest } from "../http/node";
import { problemResponse } from "../http/problem";

export type ApiContext<Params> = {
  request: RouteRequest;
  requestId: string;
  key: AuthenticatedKey;
  params: Params;
  /** The account's Social API settings, for `scrape:read` endpoints (checked to be enabled). */
  social?: SocialAccessSettings;
  /**
   * Runs a read. In a `keyInFirstRead` route, the first one also checks the key, in the same
   * statement (lib/http/keyed-request.ts KeyInFirstRead); later ones, and every one elsewhere, run alone.
   */
  sql: SqlRunner;
};

/**
 * A keyed /api/v1 route: read-only (405 for anything but GET/HEAD), then the keyed-request
 * pipeline it shares with Delta Sharing (lib/http/keyed-request.ts: key, permission, rate limit,
 * usage, request id), its errors as problem+json. The handler does its one job.
 */
export function apiRoute<Params extends Record<string, string> = Record<string, never>>(
  options: { permission: ApiKeyPermission; keyInFirstRead?: boolean },
  handler: (context: ApiContext<Params>) => Promise<Response>,
) {
  return readOnlyNodeRoute((request, { requestId, params, incoming }) =>
    keyedRequest({
      incoming,
      requestId,
      permission: options.permission,
      surface: "This endpoint",
      keyInFirstRead: options.keyInFirstRead,
      renderError: problemResponse,
      handle: ({ key, sql, social }) => handler({ request, requestId, key, params: params as Params, social, sql }),
    }),
  );
}
