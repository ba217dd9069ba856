import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISCARDED_BODY_LIMIT_BYTES, readBodyWithin } from "./request-body";

const LIMIT = 1024;
/** What readBodyWithin returned for each request: its length, or null (refused). */
const bodies: (number | null)[] = [];
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    void readBodyWithin(req, LIMIT).then((body) => {
      bodies.push(body === null ? null : body.length);
      if (body === null) res.writeHead(413, { Connection: "close" }).end("too large");
      else res.writeHead(200).end(`read ${body.length}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends `chunks` one after another (chunked unless a length is given) and reads the answer. */
function send(chunks: Buffer[], contentLength?: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = contentLength === undefined ? {} : { "Content-Length": contentLength };
    const req = request({ port, host: "127.0.0.1", method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (part: string) => (text += part));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    const writeNext = (index: number) => {
      if (index === chunks.length) return void req.end();
      req.write(chunks[index], () => setImmediate(writeNext, index + 1));
    };
    writeNext(0);
  });
}

const chunksOf = (count: number, size: number) => Array.from({ length: count }, () => Buffer.alloc(size, 120));

describe("readBodyWithin", () => {
  it("returns a body within the limit whole", async () => {
    expect(await send(chunksOf(4, 256))).toEqual({ status: 200, text: "read 1024" });
  });

  it.each([
    ["chunked, no length", undefined],
    ["with its length", 10 * 1024 * 1024],
  ])("reads a 10 MB body to its end, %s, so that its sender reads the refusal", async (_, length) => {
    expect(await send(chunksOf(160, 64 * 1024), length)).toEqual({ status: 413, text: "too large" });
  });

  it("answers at once, without waiting, a body that declares more than it would ever read", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const headers = { "Content-Length": DISCARDED_BODY_LIMIT_BYTES + 1 };
      const req = request({ port, host: "127.0.0.1", method: "POST", headers }, (res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on("error", reject);
      req.write(Buffer.alloc(1024));
    });
    expect(status).toBe(413);
  });

  it("stops reading a body without a length once past DISCARDED_BODY_LIMIT_BYTES", async () => {
    const before = bodies.length;
    const chunk = Buffer.alloc(1024 * 1024, 120);
    let sent = 0;
    // The sender writes up to twice the discard limit; it is answered (or its socket closed) before it is done.
    const outcome = await new Promise<string>((resolve) => {
      const req = request({ port, host: "127.0.0.1", method: "POST" }, (res) => {
        resolve(`status ${res.statusCode}`);
        req.destroy();
      });
      req.on("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
      const writeNext = () => {
        if (sent >= 2 * DISCARDED_BODY_LIMIT_BYTES) return void req.end();
        sent += chunk.length;
        req.write(chunk, (error) => {
          if (!error) setImmediate(writeNext);
        });
      };
      writeNext();
    });
    expect(outcome).toMatch(/^(status 413|error (EPIPE|ECONNRESET))$/);
    expect(sent).toBeLessThan(2 * DISCARDED_BODY_LIMIT_BYTES);
    expect(bodies.slice(before)).toEqual([null]);
  });
});
