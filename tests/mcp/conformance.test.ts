import { execFile } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/**
 * The MCP conformance suite (@modelcontextprotocol/conformance) against the production server: its
 * server scenarios that apply to a server with tools and without prompts, resources, logging or
 * completions. The suite sends no key, so it talks to a loopback proxy that adds one, as a
 * gateway in front of the site would; the proxy passes Host and Origin through untouched, so the
 * DNS rebinding scenario reaches the server's own check. The server runs without APP_URL (a
 * development machine): loopback origins are its own.
 */

const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];
const run = promisify(execFile);
const suite = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/package.json")),
  "dist/index.js",
);

let env: TestEnvironment;
let server: TestServer;
let proxy: http.Server;
let proxyUrl: string;

beforeAll(async () => {
  env = await createTestEnvironment("mcp_conformance");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  // Every scenario is a few requests; one account per scenario keeps them all under its 60 a minute.
  const key = (await apiKey((await buyer("mcp-conformance")).id)).secret;
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
  const target = new URL(server.url);
  proxy = http.createServer((req, res) => {
    const forwarded = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => res.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/api/mcp`;
}, 240_000);

afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await server?.stop();
  await env?.cleanup();
});

describe("the MCP conformance suite", () => {
  it.each(SCENARIOS)(
    "%s passes",
    async (scenario) => {
      const { stdout } = await run(process.execPath, [suite, "server", "--url", proxyUrl, "--scenario", scenario], {
        timeout: 60_000,
      }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`${scenario} failed:\n${error.stdout ?? ""}\n${error.stderr ?? error.message}`);
      });
      expect(stdout).toMatch(/Passed: [1-9]\d*\/\d+, 0 failed/);
    },
    90_000,
  );
});
