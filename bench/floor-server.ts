import { createReadStream, promises as fs } from "node:fs";
import http from "node:http";
import pg from "pg";
import { filesSql, ORDERS_SQL } from "./lib/list-sql";

/**
 * The floor the app is measured against: a bare `node:http` + `pg` server doing the same
 * database work as the app's order list, with nothing else (no framework, no authentication,
 * no validation beyond parsing numbers, no rate limit, no caching).
 *
 *   GET /orders?buyer=<id>&limit=&offset=   the SQL the app's Prisma client issues (same text, same
 *                                           parameters, pool of 10): one page of the buyer's orders
 *                                           (limit + 1), then the files of those orders in one query,
 *                                           answered in the API's JSON shape
 *   GET /file                               FLOOR_FILE streamed with fs.createReadStream and Content-Length
 *   GET /health                             200
 *
 * Env: DATABASE_URL, PORT, FLOOR_FILE (optional). Started by the benchmarks in a process of its own.
 */

type OrderRow = { id: string; status: string; name: string; paid_at: Date; delivered_at: Date | null };
type FileRow = {
  id: string;
  name: string;
  size: string;
  content_type: string;
  sha256: string;
  created_at: Date;
  order_id: string;
};

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const floorFile = process.env.FLOOR_FILE;

async function listOrders(buyerId: string, limit: number, offset: number) {
  const { rows } = await pool.query<OrderRow>(ORDERS_SQL, [buyerId, limit + 1, offset]);
  const files = new Map<string, FileRow[]>();
  if (rows.length) {
    const result = await pool.query<FileRow>(filesSql(rows.length), [...rows.map((row) => row.id), 0]);
    for (const file of result.rows) {
      const list = files.get(file.order_id) ?? [];
      list.push(file);
      files.set(file.order_id, list);
    }
  }
  return {
    data: rows.slice(0, limit).map((order) => ({
      id: order.id,
      status: order.status,
      name: order.name,
      paid_at: order.paid_at.toISOString(),
      delivered_at: order.delivered_at?.toISOString() ?? null,
      downloadable: order.status === "delivered",
      files: (files.get(order.id) ?? []).map((file) => ({
        id: file.id,
        name: file.name,
        size: Number(file.size),
        content_type: file.content_type,
        sha256: file.sha256,
        created_at: file.created_at.toISOString(),
      })),
    })),
    next_offset: rows.length > limit ? offset + limit : null,
  };
}

async function sendFile(res: http.ServerResponse, file: string) {
  const { size } = await fs.stat(file);
  res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
  createReadStream(file).pipe(res);
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
    listOrders(buyer, limit, offset).then((page) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(page));
    }, fail);
  } else if (url.pathname === "/file" && floorFile) {
    sendFile(res, floorFile).catch(fail);
  } else {
    res.writeHead(404);
    res.end();
  }
});

server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as import("node:net").AddressInfo;
  const result = { benchmark: "floor-server", listening: `http://127.0.0.1:${port}`, pool_size: 10 };
  console.log(JSON.stringify(result));
  console.log(`floor-server: listening on http://127.0.0.1:${port} (GET /orders, /file, /health)`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    void pool.end().finally(() => process.exit(0));
  });
}
