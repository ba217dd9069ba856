import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enableSocialAccess } from "../../lib/social/admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { startOfAFixedWindow } from "../helpers/rate-limit";

/**
 * /api/mcp over plain HTTP: what the SDK's client never sends. Each refusal of issue 42's bad
 * input is answered as the MCP transports spec and JSON-RPC say (a JSON-RPC error body, a 4xx
 * status, never a 5xx); the account's 60 requests a minute; and two instances answering one
 * client's requests alike (the server keeps no session).
 */

let env: TestEnvironment;
let first: TestServer;
let second: TestServer;
const f = {} as { key: string; scrapeKey: string; limited: string; orderId: string };

beforeAll(async () => {
  env = await createTestEnvironment("mcp_http");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  const [a, limited] = await Promise.all([buyer("mcp-http"), buyer("mcp-limited")]);
  f.orderId = (await order(a.id)).id;
  f.key = (await apiKey(a.id)).secret;
  await enableSocialAccess(a.id, 1000, 60);
  f.scrapeKey = (await apiKey(a.id, { permission: "scrape:read" })).secret;
  f.limited = (await apiKey(limited.id)).secret;
  const options = { databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } };
  [first, second] = await Promise.all([startServer(options), startServer(options)]);
}, 240_000);

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
  await env?.cleanup();
});

const ACCEPT = "application/json, text/event-stream";
const initialize = (version = "2025-11-25") => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

/** An object nested `depth` levels deep. */
const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) });

function post(body: unknown, headers: Record<string, string> = {}, key: string | null = f.key, url = first.url) {
  return fetch(`${url}/api/mcp`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: ACCEPT,
      ...(key ? { Authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("refusals", () => {
  const refusals: [string, () => Promise<Response>, number, number][] = [
    ["no key", () => post(initialize(), {}, null), 401, -32000],
    ["an unknown key", () => post(initialize(), {}, "dak_000"), 401, -32000],
    ["a scrape:read key", () => post(initialize(), {}, f.scrapeKey), 403, -32000],
    [
      "GET (no stream on a stateless server)",
      () => fetch(`${first.url}/api/mcp`, { headers: { Accept: ACCEPT } }),
      405,
      -32000,
    ],
    ["DELETE (no session to end)", () => fetch(`${first.url}/api/mcp`, { method: "DELETE" }), 405, -32000],
    ["an Origin of another site", () => post(initialize(), { Origin: "https://evil.example.com" }), 403, -32000],
    ["malformed JSON", () => post("{not json"), 400, -32700],
    ["a batch", () => post([initialize(), { jsonrpc: "2.0", id: 2, method: "ping" }]), 400, -32600],
    ["not a JSON-RPC message", () => post({ hello: "world" }), 400, -32600],
    ["no jsonrpc member", () => post({ id: 1, method: "ping" }), 400, -32600],
    ["an id that is an object", () => post({ jsonrpc: "2.0", id: { x: 1 }, method: "ping" }), 400, -32600],
    ["null", () => post("null"), 400, -32600],
    ["a number", () => post("1"), 400, -32600],
    ["tools/call without params", () => post({ jsonrpc: "2.0", id: 5, method: "tools/call" }), 200, -32602],
    [
      "tools/call with arguments that are a list",
      () => post({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "list_orders", arguments: [1] } }),
      200,
      -32602,
    ],
    [
      "tools/call with arguments that are a text",
      () => post({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "list_orders", arguments: "x" } }),
      200,
      -32602,
    ],
    ["params that are a list", () => post({ jsonrpc: "2.0", id: 8, method: "ping", params: [1] }), 200, -32602],
    ["a 10 MB body", () => post(JSON.stringify({ pad: "x".repeat(10 * 1024 * 1024) })), 413, -32000],
    ["no Accept of both types", () => post(initialize(), { Accept: "application/json" }), 406, -32000],
    [
      "a protocol version header it does not speak",
      () => post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, { "MCP-Protocol-Version": "1999-01-01" }),
      400,
      -32000,
    ],
    ["an unknown method", () => post({ jsonrpc: "2.0", id: 4, method: "resources/list" }), 200, -32601],
    // Issue 53: a 170,000-deep answer overflowed the SDK's stack, and its text was the error's data.
    [
      "a 170,000-deep result",
      () => post(`{"jsonrpc":"2.0","id":1,"result":${'{"a":'.repeat(170_000)}1${"}".repeat(170_000)}}`),
      400,
      -32700,
    ],
    [
      "a 65-deep request",
      () => post({ jsonrpc: "2.0", id: 9, method: "ping", params: { x: nested(63) } }),
      400,
      -32700,
    ],
    [
      "params._meta that is a list",
      () => post({ jsonrpc: "2.0", id: 10, method: "ping", params: { _meta: [1] } }),
      200,
      -32602,
    ],
    ["a member JSON-RPC lacks", () => post({ jsonrpc: "2.0", id: 11, method: "ping", extra: 1 }), 400, -32600],
  ];
  // The sender last, so the title's placeholders read the status and the code.
  it.each(refusals.map(([name, send, status, code]) => [name, status, code, send] as const))(
    "%s: HTTP %i with JSON-RPC error %i",
    async (_, status, code, send) => {
      const response = await send();
      expect(response.status).toBe(status);
      const body = (await response.json()) as { jsonrpc: string; error: { code: number; message: string } };
      expect(body.jsonrpc).toBe("2.0");
      expect(body.error.code).toBe(code);
      expect(body.error.message.length).toBeGreaterThan(5);
      // A short sentence, never a schema's validation dump or an exception's text.
      expect(body.error.message).not.toMatch(/\n|"expected"/);
      expect(JSON.stringify(body.error)).not.toMatch(/RangeError|Maximum call stack|at .*\.js/);
      if (status === 401) expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
      if (status === 405) expect(response.headers.get("allow")).toBe("POST");
    },
  );

  // Issue 55: what the SDK's schemas refuse, which it answered -32603 with its validation dump (params)
  // or -32700 (a message): params -32602 with the request's id, a message -32600, each a short sentence.
  const withParams = (id: number, method: string, params: unknown) => ({ jsonrpc: "2.0", id, method, params });
  const schemaRefusals = [
    [
      "initialize with {}",
      withParams(20, "initialize", {}),
      200,
      -32602,
      /^Invalid params: params\.protocolVersion is missing \(a string\)\.$/,
    ],
    [
      "initialize with clientInfo a number",
      withParams(21, "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: 1 }),
      200,
      -32602,
      /^Invalid params: params\.clientInfo must be an object, not a number\.$/,
    ],
    [
      "a number cursor",
      withParams(22, "tools/list", { cursor: 5 }),
      200,
      -32602,
      /^Invalid params: params\.cursor must be a string, not a number\.$/,
    ],
    [
      "_meta: 1",
      withParams(23, "ping", { _meta: 1 }),
      200,
      -32602,
      /^Invalid params: params\._meta must be an object, not a number\.$/,
    ],
    [
      "_meta: 1 of a method it lacks",
      withParams(24, "resources/list", { _meta: 1 }),
      200,
      -32602,
      /^Invalid params: params\._meta must be an object/,
    ],
    [
      "a progress token that is an object",
      withParams(25, "tools/list", { _meta: { progressToken: {} } }),
      200,
      -32602,
      /^Invalid params: params\._meta\.progressToken: Invalid input\.$/,
    ],
    [
      "tools/call with a number name",
      withParams(26, "tools/call", { name: 5 }),
      200,
      -32602,
      /^Invalid params: tools\/call needs params\.name/,
    ],
    ["an extra member", { jsonrpc: "2.0", id: 27, method: "tools/list", extra: 1 }, 400, -32600, /^Invalid Request: /],
    [
      "an extra member of a notification",
      { jsonrpc: "2.0", method: "notifications/initialized", extra: 1 },
      400,
      -32600,
      /^Invalid Request: /,
    ],
    ["a fractional id", { jsonrpc: "2.0", id: 1.5, method: "ping" }, 400, -32600, /^Invalid Request: /],
  ] as const;
  // The body last, so the title's placeholders read the status and the code.
  it.each(schemaRefusals.map(([name, body, status, code, message]) => [name, status, code, message, body] as const))(
    "%s: HTTP %i, JSON-RPC error %i, a short sentence",
    async (_, status, code, message, body) => {
      const response = await post(body);
      expect(response.status).toBe(status);
      const answer = (await response.json()) as { id: unknown; error: { code: number; message: string } };
      expect(answer.error.code).toBe(code);
      expect(answer.error.message).toMatch(message);
      expect(answer.error.message.length).toBeLessThan(200);
      expect(answer.id).toBe(code === -32602 ? (body as { id: number }).id : null);
    },
  );

  it("a message 64 levels deep is answered", async () => {
    const response = await post({ jsonrpc: "2.0", id: 12, method: "ping", params: { x: nested(62) } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: 12, result: {} });
  });

  it("a loopback Origin is this development site's own: accepted", async () => {
    const response = await post(initialize(), { Origin: "http://localhost:3000" });
    expect(response.status).toBe(200);
  });

  it.each([
    ["2025-11-25", "2025-11-25"],
    ["2025-06-18", "2025-06-18"],
    ["2025-03-26", "2025-11-25"],
    ["2024-11-05", "2025-11-25"],
  ])("initialize asking for %s is answered with %s", async (asked, answered) => {
    const response = await post(initialize(asked));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: { protocolVersion: string } };
    expect(body.result.protocolVersion).toBe(answered);
  });
});

describe("instances and the rate limit", () => {
  it("a client initialized on one instance calls tools on the other", async () => {
    expect((await post(initialize())).status).toBe(200);
    const headers = { "MCP-Protocol-Version": "2025-11-25" };
    const call = {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "get_order", arguments: { order_id: f.orderId } },
    };
    const response = await post(call, headers, f.key, second.url);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: { structuredContent: { id: string } } };
    expect(body.result.structuredContent.id).toBe(f.orderId);
  });

  it("the account's 61st request in a minute is HTTP 429 with Retry-After, as a JSON-RPC error", async () => {
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const statuses = [];
    await startOfAFixedWindow();
    for (let i = 0; i < 60; i++) statuses.push((await post(ping, {}, f.limited)).status);
    expect(new Set(statuses)).toEqual(new Set([200]));
    const refused = await post(ping, {}, f.limited);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await refused.json()) as { error: { code: number; data: { code: string } } };
    expect(body.error.data.code).toBe("rate_limited");
  });
});
