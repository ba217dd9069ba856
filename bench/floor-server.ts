import { createReadStream, promises as fs } from "node:fs";
import http from "node:http";
import pg from "pg";
import { orderPageBody, type OrderPageRow } from "../lib/orders/queries";
import { orderPageStatement } from "./lib/list-sql";

/**
 * The floor the app is measured against: a bare `node:http` + `pg` server doing the same
 * database work as the app's order list, with nothing else (no framework, no authentication,
 * no validation beyond parsing numbers, no rate limit, no caching).
 *
 *   GET /orders?buyer=<id>&limit=&offset=   the statement the app runs (same text, same parameters,
 *                                           pool of 10), answered with the same JSON body
 *   GET /file                               FLOOR_FILE streamed with fs.createReadStream (1 MiB buffer) and Content-Length
 *   GET /file-64k                           the same with createReadStream's default 64 KiB buffer (a reference)
 *   GET /health                             200
 *
 * Env: DATABASE_URL, PORT, FLOOR_FILE (optional). Started by the benchmarks in a process of its own.
 */

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const floorFile = process.env.FLOOR_FILE;

async function listOrders(buyerId: string, limit: number, offset: number): Promise<string> {
  const { rows } = await pool.query<OrderPageRow>(orderPageStatement(buyerId, limit, offset));
  return orderPageBody(rows[0], { limit, offset });
}

/** The floor reads 1 MiB at a time (about twice the speed of the default 64 KiB, kept as a reference). */
async function sendFile(res: http.ServerResponse, file: string, highWaterMark: number) {
  const { size } = await fs.stat(file);
  res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
  createReadStream(file, { highWaterMark }).pipe(res);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://floor");
  const fail = (error: Error) => {
    res.writeHead(500, { "Content-Type": "text/plain" });
    res.end(error.message);
  };
  if (url.pathname === "/health") {
    res.end("ok");
  } else if (url.pathname === "/orders") {
    const buyer = url.searchParams.get("buyer") ?? "";
    const limit = Number(url.searchParams.get("limit") ?? 20);
    const offset = Number(url.searchParams.get("offset") ?? 0);
    listOrders(buyer, limit, offset).then((body) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(body);
    }, fail);
  } else if (url.pathname === "/file" && floorFile) {
    sendFile(res, floorFile, 1024 * 1024).catch(fail);
  } else if (url.pathname === "/file-64k" && floorFile) {
    sendFile(res, floorFile, 64 * 1024).catch(fail);
  } else {
    res.writeHead(404);
    res.end();
  }
});

server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as import("node:net").AddressInfo;
  const result = { benchmark: "floor-server", listening: `http://127.0.0.1:${port}`, pool_size: 10 };
  console.log(JSON.stringify(result));
  console.log(`floor-server: listening on http://127.0.0.1:${port} (GET /orders, /file, /file-64k, /health)`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    void pool.end().finally(() => process.exit(0));
  });
}
