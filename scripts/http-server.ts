import { timingSafeEqual } from "node:crypto";
import http from "node:http";
import { parseArgs } from "node:util";
import next from "next";
import { sendResponse } from "../lib/http/node";
import { problemResponse } from "../lib/http/problem";
import { requestIdFrom } from "../lib/request-id";
import { API_PATH, methodNotAllowed, unroutableApiPath } from "../lib/http/responses";
import { markRequestServer } from "../lib/db/timeouts";
import { httpServerOptions, httpTimeouts, type HttpTimeouts } from "../lib/http/server-timeouts";
import { isDownloadLinkPath, serveDownloadLink } from "../lib/http/download-link";
import { flushUsage } from "../lib/keys/usage";
import { closeJobQueue } from "../lib/queue";
import { startJobWorker } from "../lib/jobs/registry";
import { clientIp } from "../lib/http/client-ip";
import { CLIENT_IP_HEADER } from "../lib/security/header";
import { API_HEADERS } from "../lib/security-headers";
import { API_V1_PATH, serveApiV1 } from "../lib/api/dispatch";
import { serveDeltaSharing, SHARING_PATH_PATTERN } from "../lib/sharing/dispatch";
import { MCP_PATH_PATTERN, serveMcp } from "../lib/mcp/endpoint";
import { batchLogWrites, errorFields, logger } from "../lib/log";
import { metricsExposition } from "../lib/metrics";
import { assignRequestId, recordRequestWhenDone } from "../lib/observability";

/**
 * The app's HTTP server, run by the launcher (scripts/serve.ts) for `npm run dev` and `npm start`:
 * Next.js's request handler on a node:http server of our own, which is what `next dev`/`next start`
 * run too, plus what they cannot do: a request whose method Next.js cannot turn into a web Request
 * (TRACE: undici refuses it, and Next.js answered its bare HTML 500 and logged a stack) is answered
 * here, and so is an API path Next.js would not route as sent (see unroutableApiPath). Every request
 * gets its id here, one JSON log line and a duration observation (lib/observability.ts),
 * /api/metrics serves the Prometheus metrics behind METRICS_TOKEN, the signed download links
 * (/api/dl) are served here, past Next.js, at the speed of the disk (lib/http/download-link.ts), and so
 * is the API in production (lib/api/dispatch.ts, from the route table lib/api/routes.ts), with the headers Next.js would have added.
 * Usage: `http-server.ts dev|start [-p PORT] [-H HOSTNAME]`.
 */
const mode = process.argv[2];
if (mode !== "dev" && mode !== "start") {
  console.error("Usage: tsx scripts/http-server.ts dev|start [-p PORT] [-H HOSTNAME]");
  process.exit(1);
}
const { values } = parseArgs({
  args: process.argv.slice(3),
  options: { port: { type: "string", short: "p" }, hostname: { type: "string", short: "H" } },
});
const port = Number(values.port ?? process.env.PORT ?? 3000);
const hostname = values.hostname;

// Methods a web Request can be made for; Node's parser already refuses unknown ones, and CONNECT never reaches here.
const UNSUPPORTED_METHODS = new Set(["TRACE", "TRACK"]);

// A log line per request: written in batches (lib/log.ts), before anything is logged.
batchLogWrites();
let timeouts: HttpTimeouts;
try {
  // This process answers requests: its database statements get a deadline (lib/db/timeouts.ts).
  markRequestServer();
  // And its clients a deadline to send their requests in (lib/http/server-timeouts.ts).
  timeouts = httpTimeouts();
} catch (error) {
  logger().fatal((error as Error).message);
  process.exit(1);
}
const server = http.createServer(httpServerOptions(timeouts));
server.timeout = timeouts.idleMs;
const app = next({ dev: mode === "dev", hostname, port, httpServer: server });
await app.prepare();
const handle = app.getRequestHandler();

server.on("request", (req, res) => {
  const requestId = assignRequestId(req);
  // Pages and server actions see only headers: the client's address goes in one, always overwritten.
  // An IPv4 client on a dual-stack socket shows as it is (1.2.3.4, not ::ffff:1.2.3.4).
  req.headers[CLIENT_IP_HEADER] = clientIp(req).replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1");
  recordRequestWhenDone(req, res, requestId);
  // The Delta Sharing server answers every method and path under it in its protocol's own shape.
  if (SHARING_PATH_PATTERN.test(req.url ?? "/")) return void direct(req, res, serveDeltaSharing);
  // So does the MCP server (lib/mcp/endpoint.ts), in JSON-RPC's.
  if (MCP_PATH_PATTERN.test(req.url ?? "/")) return void direct(req, res, serveMcp);
  if (UNSUPPORTED_METHODS.has(req.method ?? "")) return void refuseMethod(req, res);
  const unroutable = unroutableApiPath(req.url ?? "/");
  if (unroutable) return void sendResponse(res, problemResponse(unroutable, requestId));
  const path = req.url?.split("?", 1)[0] ?? "/";
  if (path === METRICS_PATH) return void serveMetrics(req, res);
  if (isDownloadLinkPath(path)) return void direct(req, res, serveDownloadLink);
  if (mode === "start" && API_V1_PATH.test(path))
    return void direct(req, res, (req, res) => serveApiV1(req, res, path));
  void handle(req, res);
});
server.listen(port, hostname, () => {
  logger().info({ port, hostname, mode }, `Listening on http://${hostname ?? "localhost"}:${port} (${mode}).`);
});

// The job worker runs in this process unless it runs on its own (`npm run worker`, JOBS_WORKER=off here).
const stopWorker =
  process.env.JOBS_WORKER === "off"
    ? undefined
    : startJobWorker().catch((error: unknown) => {
        logger().error({ ...errorFields(error) }, "The job worker did not start: webhooks and reminders wait.");
        return undefined;
      });

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    // Usage counts still in the process are written before it exits; jobs in hand are finished.
    void Promise.allSettled([app.close(), flushUsage(), stopWorker?.then((stop) => stop?.()), closeJobQueue()]).finally(
      () => process.exit(0),
    );
  });
}

/** What this server serves past Next.js gets the headers Next.js would have added (next.config.ts). */
function direct(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  serve: (req: http.IncomingMessage, res: http.ServerResponse) => unknown,
): void {
  for (const [name, value] of Object.entries(API_HEADERS)) res.setHeader(name, value);
  void Promise.resolve(serve(req, res)).catch((error: unknown) => {
    logger().error({ err: error }, "unexpected error");
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
}

const METRICS_PATH = "/api/metrics";

/**
 * Prometheus metrics for the operator's scraper, with `Authorization: Bearer $METRICS_TOKEN`.
 * Without METRICS_TOKEN the endpoint does not exist (404): metrics are never public by accident.
 */
async function serveMetrics(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const token = process.env.METRICS_TOKEN;
  if (!token) {
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store" });
    return void res.end("Not found.\n");
  }
  const given = Buffer.from(req.headers.authorization ?? "");
  const expected = Buffer.from(`Bearer ${token}`);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    res.writeHead(401, {
      "Content-Type": "text/plain; charset=utf-8",
      "Cache-Control": "no-store",
      "WWW-Authenticate": 'Bearer realm="metrics"',
    });
    return void res.end("Send Authorization: Bearer <METRICS_TOKEN>.\n");
  }
  const { contentType, body } = await metricsExposition();
  res.writeHead(200, { "Content-Type": contentType, "Cache-Control": "no-store" });
  res.end(body);
}

/**
 * The API's contract answer (405 problem+json with Allow and a request id) for the API and its
 * download links; a plain 405 elsewhere (not a 5xx: the server is fine, the method is refused).
 */
async function refuseMethod(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (API_PATH.test(req.url ?? "")) {
    return sendResponse(res, methodNotAllowed(req.method ?? "", requestIdFrom(req.headers["x-request-id"])));
  }
  res.writeHead(405, {
    "Content-Type": "text/plain; charset=utf-8",
    "Cache-Control": "no-store",
    Allow: "GET, HEAD, POST",
  });
  res.end(`${req.method} is not allowed.\n`);
}
