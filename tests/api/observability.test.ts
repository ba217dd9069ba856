import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_V1_BASE } from "../../lib/api/dispatch";
import { API_ROUTES } from "../../lib/api/routes";
import { templateNames } from "../../lib/http/route-table";
import { SHARING_PATH } from "../../lib/sharing/profile";
import { SHARING_ROUTES } from "../../lib/sharing/dispatch";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/** What an operator of several instances reads: JSON request logs and Prometheus metrics. */

const METRICS_TOKEN = "metrics-token-for-the-test-0123456789";
let env: TestEnvironment;
let server: TestServer;
let withoutMetrics: TestServer;
let account: { id: string };
let key: string;
let delivered: Awaited<ReturnType<typeof order>>;

beforeAll(async () => {
  env = await createTestEnvironment("observability");
  account = await buyer("observability");
  key = (await apiKey(account.id)).secret;
  delivered = await order(account.id, { files: { "a.txt": Buffer.from("a\n") } });
  [server, withoutMetrics] = await Promise.all([
    startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { METRICS_TOKEN, REDIS_URL: "" } }),
    startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { METRICS_TOKEN: "" } }),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all([server?.stop(), withoutMetrics?.stop()]);
  await env?.cleanup();
});

const api = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/api/v1${path}`, {
    headers: { Authorization: `Bearer ${key}`, ...headers },
    redirect: "manual",
  });

type LogLine = Record<string, unknown>;
const logLines = (): LogLine[] =>
  server
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as LogLine);

describe("request logs", () => {
  it("are one JSON line per request with its id, route, status, duration and buyer, and no secret", async () => {
    const listed = await api("/orders?limit=5", { "X-Request-Id": "trace-observability-1" });
    expect(listed.status).toBe(200);
    const download = await api(`/orders/${delivered.id}/files/${delivered.files[0]!.id}`, {
      "X-Request-Id": "trace-observability-2",
    });
    const signedLink = download.headers.get("location")!;
    expect((await fetch(signedLink)).status).toBe(200);
    await fetch(`${server.url}/signin/confirm?token=sign-in-token-secret&email=a%40b.c`);

    await expect.poll(() => logLines().some((line) => line.route === "/signin/confirm")).toBe(true);
    const lines = logLines();
    expect(lines.find((line) => line.request_id === "trace-observability-1")).toMatchObject({
      level: "info",
      msg: "request",
      method: "GET",
      route: "/api/v1/orders",
      status: 200,
      duration_ms: expect.any(Number),
      buyer_id: account.id,
      time: expect.stringMatching(/Z$/),
    });
    expect(lines.find((line) => line.request_id === "trace-observability-2")).toMatchObject({
      route: "/api/v1/orders/{id}/files/{fileId}",
      status: 302,
      buyer_id: account.id,
    });
    expect(lines.some((line) => line.route === "/api/dl/{token}" && line.status === 200)).toBe(true);

    // Every line the server printed is JSON (apart from Next.js's own start-up notes), and no
    // key, signed link, sign-in token or secret appears anywhere.
    const output = server.output();
    for (const secret of [key, new URL(signedLink).pathname, "sign-in-token-secret", TEST_AUTH_SECRET]) {
      expect(output).not.toContain(secret);
    }
  });
});

describe("metrics at /api/metrics", () => {
  it("need the token", async () => {
    expect((await fetch(`${server.url}/api/metrics`)).status).toBe(401);
    const wrong = await fetch(`${server.url}/api/metrics`, { headers: { Authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${withoutMetrics.url}/api/metrics`, { headers: { Authorization: "Bearer " } })).status).toBe(
      404,
    );
  });

  it("count requests by route and status, rate-limit decisions, download links by driver and the pool", async () => {
    await api("/orders");
    await api(`/orders/${delivered.id}/files/${delivered.files[0]!.id}`);
    const response = await fetch(`${server.url}/api/metrics`, {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await response.text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);
    expect(
      value(/^http_request_duration_seconds_count\{route="\/api\/v1\/orders",method="GET",status="200"\} (\d+)$/m),
    ).toBeGreaterThanOrEqual(1);
    expect(value(/^ratelimit_decisions_total\{policy="datasets",outcome="allowed"\} (\d+)$/m)).toBeGreaterThanOrEqual(
      2,
    );
    expect(value(/^download_redirects_total\{driver="local"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^db_pool_connections\{state="total"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    // Raw paths (ids, tokens) never become labels.
    expect(text).not.toContain(delivered.id);
  });
});

describe("route names", () => {
  const metricsText = async () =>
    (await fetch(`${server.url}/api/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  /** A template with each `{name}` filled, so the path reaches the route whatever it then answers. */
  const filled = (template: string) =>
    templateNames(template).reduce((path, name) => path.replace(`{${name}}`, `${name}-0`), template);
  const requested = [
    ...API_ROUTES.map((entry) => ({ method: "GET", name: API_V1_BASE + entry.path })),
    ...SHARING_ROUTES.map((entry) => ({ method: entry.method, name: SHARING_PATH + entry.path })),
  ];

  it("come from the API's and Delta Sharing's route tables, for every route", async () => {
    expect(requested.length).toBeGreaterThan(15);
    for (const { method, name } of requested) {
      await fetch(server.url + filled(name), {
        method,
        headers: { Authorization: `Bearer ${key}` },
        redirect: "manual",
      });
    }
    await fetch(`${server.url}/api/v1/no/such/route`, { headers: { Authorization: `Bearer ${key}` } });
    const text = await metricsText();
    const labels = new Set(
      [...text.matchAll(/^http_request_duration_seconds_count\{route="([^"]*)"/gm)].map((m) => m[1]),
    );
    for (const { name } of requested) expect(labels, name).toContain(name);
    expect(labels).toContain("/api/v1/{unknown}");
    expect([...labels].filter((label) => label?.includes("-0"))).toEqual([]);
  });
});
