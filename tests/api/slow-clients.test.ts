import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import type { TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

/**
 * Slow clients against the production server: one that trickles its headers, one that trickles
 * its body, one that goes quiet. Each connection is closed once its deadline (lib/http/server-timeouts.ts,
 * short here) has passed, where Node's defaults would hold it for about 90 s.
 */

const TIMEOUTS = {
  HTTP_HEADERS_TIMEOUT_MS: "1500",
  HTTP_REQUEST_TIMEOUT_MS: "3000",
  HTTP_KEEP_ALIVE_TIMEOUT_MS: "1000",
};
/** Well past every deadline above (a loaded machine), far below Node's 60 s header default. */
const CLOSED_WITHIN_MS = 20_000;

let env: TestEnvironment;
let server: TestServer;

beforeAll(async () => {
  env = await createTestEnvironment("slow_clients");
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", JOBS_WORKER: "off", ...TIMEOUTS },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

/**
 * Opens a connection, sends `start`, then one byte of `trickle` every 300 ms; resolves with what
 * the server answered and when it closed the connection, or fails after CLOSED_WITHIN_MS.
 */
function trickle(start: string, trickleBytes: string): Promise<{ answer: string; closedAfterMs: number }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    const opened = Date.now();
    let answer = "";
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < trickleBytes.length && !socket.destroyed) socket.write(trickleBytes[sent++]!);
    }, 300);
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server still held the connection after ${CLOSED_WITHIN_MS} ms`));
    }, CLOSED_WITHIN_MS);
    socket.on("data", (chunk) => (answer += chunk.toString("latin1")));
    socket.on("error", () => {}); // a reset is a close too
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ answer, closedAfterMs: Date.now() - opened });
    });
    socket.write(start);
  });
}

describe("slow clients", () => {
  it("a client trickling its headers is answered 408 and closed once the header deadline passes", async () => {
    const { answer, closedAfterMs } = await trickle(
      "GET /api/v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n",
      "X-Slow: " + "a".repeat(1000),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeGreaterThanOrEqual(1500);
  });

  it("a client trickling its body is answered 408 and closed once the request deadline passes", async () => {
    const { answer, closedAfterMs } = await trickle(
      "POST /api/auth/signin/email HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n",
      "b".repeat(1000),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeGreaterThanOrEqual(3000);
  });

  it("an idle kept-alive connection is closed after the keep-alive deadline", async () => {
    const { answer } = await trickle("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "");
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("a malformed deadline stops the server at start with a clear message", async () => {
    await expect(
      startServer({
        databaseUrl: env.database.url,
        storageDir: env.storageDir,
        env: { REDIS_URL: "", JOBS_WORKER: "off", HTTP_REQUEST_TIMEOUT_MS: "30s" },
      }),
    ).rejects.toThrow(/HTTP_REQUEST_TIMEOUT_MS must be a whole number of milliseconds/);
  });
});
