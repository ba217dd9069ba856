import http from "node:http";
import { parseArgs } from "node:util";
import next from "next";
import { sendResponse } from "../lib/api/node";
import { problemResponse } from "../lib/api/problem";
import { requestIdFrom } from "../lib/api/request-id";
import { API_PATH, methodNotAllowed, unroutableApiPath } from "../lib/api/responses";
import { markRequestServer } from "../lib/db/timeouts";

/**
 * The app's HTTP server, run by the launcher (scripts/serve.ts) for `npm run dev` and `npm start`:
 * Next.js's request handler on a node:http server of our own, which is what `next dev`/`next start`
 * run too, plus what they cannot do: a request whose method Next.js cannot turn into a web Request
 * (TRACE: undici refuses it, and Next.js answered its bare HTML 500 and logged a stack) is answered
 * here, and so is an API path Next.js would not route as sent (see unroutableApiPath).
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

try {
  // This process answers requests: its database statements get a deadline (lib/db/timeouts.ts).
  markRequestServer();
} catch (error) {
  console.error(`[dataset-access] error: ${(error as Error).message}`);
  process.exit(1);
}

const server = http.createServer();
const app = next({ dev: mode === "dev", hostname, port, httpServer: server });
await app.prepare();
const handle = app.getRequestHandler();

server.on("request", (req, res) => {
  if (UNSUPPORTED_METHODS.has(req.method ?? "")) return void refuseMethod(req, res);
  const unroutable = unroutableApiPath(req.url ?? "/");
  if (unroutable)
    return void sendResponse(res, problemResponse(unroutable, requestIdFrom(req.headers["x-request-id"])));
  void handle(req, res);
});
server.listen(port, hostname, () => {
  console.log(`[dataset-access] Listening on http://${hostname ?? "localhost"}:${port} (${mode}).`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    void app.close().finally(() => process.exit(0));
  });
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
