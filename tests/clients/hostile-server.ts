import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

type RenditionFormat = "parquet" | "csv" | "jsonl";

/**
 * A file as a hostile server describes it: any id and name, the bytes it serves for it, and where
 * its download links point (default: the server's own /blob/ path); its format (default binary)
 * and renditions: their bytes, or "pending" (being made, a 202 whenever asked for).
 */
export type FakeFile = {
  id: string;
  name: string;
  content: Buffer;
  location?: string;
  format?: string;
  renditions?: Partial<Record<RenditionFormat, Buffer | "pending">>;
};
export type FakeOrder = {
  id: string;
  name: string;
  status: "delivered" | "refunded" | "unfinished";
  files: FakeFile[];
  /** Tables by name: the version numbers the server lists (anything), newest first; each change file is `changes`. */
  tables?: Record<string, { versions: unknown[]; changes: Buffer }>;
};

/** Orders per page: small, so a client must follow next_offset. */
const PAGE = 3;
const AT = "2025-01-02T03:04:05.000Z";

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** An order in the API's shape (lib's Order and File), whatever its id and names. */
function apiOrder(order: FakeOrder) {
  return {
    id: order.id,
    status: order.status,
    name: order.name,
    paid_at: AT,
    delivered_at: order.status === "delivered" ? AT : null,
    downloadable: order.status === "delivered",
    files: order.files.map((file) => ({
      id: file.id,
      name: file.name,
      size: file.content.length,
      content_type: "text/plain",
      sha256: sha256(file.content),
      created_at: AT,
      format: file.format ?? "binary",
      compression: null,
      profile_status: file.format && file.format !== "binary" ? "ready" : "none",
      rows: null,
      columns: null,
      profile_error: null,
      renditions: Object.entries(file.renditions ?? {}).map(([format, made]) =>
        made === "pending"
          ? { format, size: null, sha256: null, status: "pending" }
          : { format, size: made.length, sha256: sha256(made), status: "ready" },
      ),
    })),
  };
}

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": status < 400 ? "application/json" : "application/problem+json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

const notFound = (res: http.ServerResponse, code: string) => send(res, 404, { status: 404, code, detail: "No." });

/**
 * A fake Dataset Access API on loopback that answers whatever ids and names a test gives it, in the
 * API's shapes: GET /api/v1/orders (pages with next_offset), GET /api/v1/orders/{id}, and
 * GET /api/v1/orders/{id}/files/{fileId}[?format=] as a 302 to /blob/{order}/{file}[/{format}] (or
 * the file's `location`; a 202 for a rendition "pending", a 404 for one it lacks), which serves the bytes
 * (their sha256 is the one the metadata gives, so every download verifies). `orders` may change
 * between runs (an order refunded). Every path asked is recorded in `requests`.
 */
export async function startHostileServer(orders: FakeOrder[]) {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    requests.push(url.pathname);
    const parts = url.pathname.split("/").slice(1).map(decodeURIComponent);
    if (url.pathname === "/api/v1/orders") {
      const offset = Number(url.searchParams.get("offset") ?? 0);
      const end = offset + Math.min(PAGE, Number(url.searchParams.get("limit") ?? 20));
      return send(res, 200, {
        data: orders.slice(offset, end).map(apiOrder),
        next_offset: end < orders.length ? end : null,
      });
    }
    if (parts[0] === "changes") {
      const content = orders[Number(parts[1])]?.tables?.[parts[2] ?? ""]?.changes ?? Buffer.alloc(0);
      res.writeHead(200, { "content-length": content.length, etag: `"${sha256(content)}"` });
      return res.end(content);
    }
    if (parts[0] === "blob") {
      const file = orders[Number(parts[1])]?.files[Number(parts[2])];
      const content = parts[3] ? file?.renditions?.[parts[3] as RenditionFormat] : file?.content;
      if (!(content instanceof Buffer)) return notFound(res, "file_not_found");
      res.writeHead(200, {
        "content-type": "text/plain",
        "content-length": content.length,
        etag: `"${sha256(content)}"`,
      });
      return res.end(content);
    }
    const [api, version, collection, orderId, files, fileId] = parts;
    if (api !== "api" || version !== "v1" || collection !== "orders") return notFound(res, "not_found");
    const orderIndex = orders.findIndex((order) => order.id === orderId);
    const order = orders[orderIndex];
    if (!order) return notFound(res, "order_not_found");
    if (files === undefined) return send(res, 200, apiOrder(order));
    if (files === "tables") {
      const table = order.tables?.[fileId ?? ""];
      if (!table) return notFound(res, "table_not_found");
      const [, , , , , name, versions, number, changes] = parts;
      if (versions === undefined) return send(res, 200, { name, mode: "snapshot", key: null, version: 3, rows: 1 });
      if (number === undefined) {
        const data = table.versions.map((each) => ({
          version: each,
          mode: "snapshot",
          created_at: AT,
          rows: 1,
          columns: [],
          changes: null,
          files: [],
        }));
        return send(res, 200, { data, next_offset: null });
      }
      if (changes !== "changes") return notFound(res, "version_not_found");
      res.writeHead(302, { location: `/changes/${orderIndex}/${encodeURIComponent(fileId!)}`, "content-length": 0 });
      return res.end();
    }
    const fileIndex = order.files.findIndex((file) => file.id === fileId);
    if (files !== "files" || fileIndex < 0) return notFound(res, "file_not_found");
    const file = order.files[fileIndex]!;
    const format = url.searchParams.get("format");
    const rendition = format && format !== file.format ? file.renditions?.[format as RenditionFormat] : undefined;
    if (format && format !== file.format && !rendition) return notFound(res, "preview_not_available");
    if (rendition === "pending") {
      res.writeHead(202, { "retry-after": "1", "content-type": "application/problem+json" });
      return res.end(JSON.stringify({ status: 202, code: "rendition_pending", detail: "Being made." }));
    }
    const blob = `/blob/${orderIndex}/${fileIndex}${rendition ? `/${format}` : ""}`;
    res.writeHead(302, { location: file.location ?? blob, "content-length": 0 });
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
