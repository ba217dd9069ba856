import type { IncomingMessage, ServerResponse } from "node:http";
import { requestIdFrom } from "./request-id";
import { logger } from "./log";
import { observeRequest } from "./metrics";

/**
 * One log line and one histogram observation per HTTP request, made by the app's server
 * (scripts/http-server.ts) when the response ends: request id, method, route pattern, status,
 * duration and, once an API key has been checked, the buyer id. Never the raw URL (its query may
 * hold a sign-in token or a signed link), never a header.
 */

const ANNOTATION = Symbol.for("dataset-access.request-annotation");
type Annotation = { buyerId?: string; route?: string };
type Annotated = IncomingMessage & { [ANNOTATION]?: Annotation };

/** Gives the request its id once, so the log, the metrics and the response share it. */
export function assignRequestId(req: IncomingMessage): string {
  const id = requestIdFrom(req.headers["x-request-id"]);
  req.headers["x-request-id"] = id;
  return id;
}

/**
 * Notes what a request's log line and metrics should name: who it acted for (once the key is
 * checked) and its route (the dispatcher that matched it against its route table names it, so a
 * new route is named without a second list here).
 */
export function annotateRequest(req: IncomingMessage, annotation: Annotation): void {
  const annotated = req as Annotated;
  annotated[ANNOTATION] = { ...annotated[ANNOTATION], ...annotation };
}

export function recordRequestWhenDone(req: IncomingMessage, res: ServerResponse, requestId: string): void {
  const started = process.hrtime.bigint();
  res.once("close", () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = (req as Annotated)[ANNOTATION]?.route ?? routePattern(req.url ?? "/", res.statusCode);
    const method = req.method ?? "";
    observeRequest(route, method, res.statusCode, seconds);
    const entry = {
      request_id: requestId,
      method,
      route,
      status: res.statusCode,
      duration_ms: Math.round(seconds * 10_000) / 10,
      buyer_id: (req as Annotated)[ANNOTATION]?.buyerId,
      // A client that went away before the answer was complete.
      aborted: res.writableFinished ? undefined : true,
    };
    if (route.startsWith("/_next/")) logger().debug(entry, "request");
    else logger().info(entry, "request");
  });
}

const ID = "[a-z]{3}_[0-9a-f]{32}";
/** Path shapes with their variable parts named; anything else is "other", so labels stay few. */
const PATTERNS: [RegExp, string][] = [
  // Paths in the API's and Delta Sharing's route tables are named by their dispatchers
  // (annotateRequest); these are what neither table has.
  [/^\/api\/v1(\/.*)?$/, "/api/v1/{unknown}"],
  [/^\/api\/dl(\/.*)?$/, "/api/dl/{token}"],
  [/^\/api\/delta-sharing(\/.*)?$/, "/api/delta-sharing/{unknown}"],
  [/^\/api\/auth\/[a-z-]+(\/[a-z-]+)?$/, "/api/auth/{action}"],
  [/^\/api\/(health|metrics)$/, ""],
  [new RegExp(`^/orders/${ID}$`), "/orders/{id}"],
  [new RegExp(`^/orders/${ID}/files/${ID}$`), "/orders/{id}/files/{fileId}"],
  [/^\/share\/[^/]+$/, "/share/{token}"],
  [/^\/share\/[^/]+\/files\/[^/]+$/, "/share/{token}/files/{fileId}"],
  [/^\/_next\/static\//, "/_next/static"],
  [/^\/_next\//, "/_next"],
  [/^\/(orders|keys|signin|signin\/[a-z-]+|getting-started|docs\/api|dev\/mailbox|icon\.svg|favicon\.ico)?$/, ""],
];

/** A request path as a route pattern, for logs and metrics. A 404 outside the API is "{not found}". */
export function routePattern(url: string, status: number): string {
  const path = url.split("?")[0]!;
  for (const [pattern, name] of PATTERNS) {
    if (pattern.test(path)) {
      if (status === 404 && !path.startsWith("/api/")) return "{not found}";
      return name || path;
    }
  }
  return status === 404 ? "{not found}" : "{other}";
}
