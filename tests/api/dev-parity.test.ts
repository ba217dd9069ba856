import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_ROUTES } from "../../lib/api/routes";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/**
 * `npm run dev` serves /api/v1 as `npm start` does: the development server (Next.js, through the
 * one catch-all pages/api/v1/[[...path]].ts) and the production server (the dispatcher, past
 * Next.js) get the same requests, for every route of the table and the ways to get them wrong,
 * and must answer the same status, the headers that matter and the same body (request ids, the
 * server's own address and signed tokens aside).
 */

let env: TestEnvironment;
let dev: TestServer;
let production: TestServer;
const fixtures = {} as { key: string; otherOrder: string; params: Record<string, string> };

beforeAll(async () => {
  env = await createTestEnvironment("api_parity");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  const account = await buyer("parity");
  const delivered = await order(account.id, { files: { "notes.txt": Buffer.from("hello\n") } });
  await publishTable({
    orderId: delivered.id,
    table: "products",
    key: ["id"],
    parts: [{ name: "products.csv", source: { stream: Readable.from([Buffer.from("id,name\n1,mug\n2,cup\n")]) } }],
  });
  await processPendingNow();
  fixtures.key = (await apiKey(account.id)).secret;
  fixtures.otherOrder = (await order((await buyer("parity-other")).id)).id;
  fixtures.params = {
    id: delivered.id,
    fileId: delivered.files[0]!.id,
    name: "products",
    version: "1",
    platform: "instagram",
  };
  const options = {
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", JOBS_WORKER: "off" },
  };
  // One at a time: the machine's cores go to Next.js's compiler first.
  production = await startServer(options);
  dev = await startServer({ ...options, mode: "dev" });
}, 300_000);

afterAll(async () => {
  await Promise.all([dev?.stop(), production?.stop()]);
  await env?.cleanup();
});

/** A path of the table with the fixtures' values in its parameters. */
const concrete = (template: string) =>
  template.replace(/\{(\w+)\}/g, (_, name: string) =>
    template.startsWith("/exports") ? "exr_00000000000000000000000000000000" : fixtures.params[name]!,
  );

type Probe = { name: string; path: string; method?: string; key?: string | null };

function probes(): Probe[] {
  const list: Probe[] = [];
  for (const entry of API_ROUTES) {
    const path = concrete(entry.path);
    list.push({ name: `GET ${entry.path}`, path });
    list.push({ name: `HEAD ${entry.path}`, path, method: "HEAD" });
    list.push({ name: `POST ${entry.path}`, path, method: "POST" });
    if (entry.permission !== "public") list.push({ name: `${entry.path} without a key`, path, key: null });
  }
  return [
    ...list,
    { name: "a bad limit", path: "/orders?limit=0" },
    { name: "a bad format", path: `/orders/${fixtures.params.id}/tables/products/versions/1/changes?format=xml` },
    { name: "a bad version", path: `/orders/${fixtures.params.id}/tables/products/versions/0` },
    { name: "another buyer's order", path: `/orders/${fixtures.otherOrder}` },
    { name: "an unknown table", path: `/orders/${fixtures.params.id}/tables/nothing` },
    { name: "an invalid key", path: "/orders", key: "dak_not_a_key" },
    { name: "an unknown path", path: "/nothing/here" },
    { name: "DELETE on an unknown path", path: "/nothing", method: "DELETE" },
    { name: "the API's root", path: "" },
    { name: "an undecodable segment", path: "/orders/%zz" },
    { name: "an encoded segment", path: `/orders/${fixtures.params.id}/tables/prod%75cts` },
  ];
}

/** The headers a client acts on, and the security headers every answer carries. */
const COMPARED_HEADERS = [
  "content-type",
  "cache-control",
  "allow",
  "retry-after",
  "vary",
  "location",
  "ratelimit-policy",
  "www-authenticate",
  "content-security-policy",
  "x-content-type-options",
  "x-frame-options",
  "referrer-policy",
  "permissions-policy",
  "cross-origin-opener-policy",
];

async function answer(server: TestServer, probe: Probe) {
  const key = probe.key === undefined ? fixtures.key : probe.key;
  const response = await fetch(`${server.url}/api/v1${probe.path}`, {
    method: probe.method ?? "GET",
    redirect: "manual",
    headers: key ? { Authorization: `Bearer ${key}` } : {},
  });
  const own = (text: string) =>
    text
      .replaceAll(server.url, "<origin>")
      .replace(/\/api\/dl\/[^"\s]+/g, "/api/dl/<token>")
      .replace(/"request_id":"[^"]+"/g, '"request_id":"<id>"');
  const headers = Object.fromEntries(
    COMPARED_HEADERS.flatMap((name) => {
      let value = response.headers.get(name);
      // Next.js compresses what it serves in development (transport only: the body read is the same).
      if (name === "vary") value = value?.replace(/(^|,\s*)Accept-Encoding/i, "").replace(/^,\s*/, "") || null;
      return value === null ? [] : [[name, own(value)]];
    }),
  );
  expect(response.headers.get("x-request-id"), probe.name).toBeTruthy();
  return { status: response.status, headers, body: own(await response.text()) };
}

describe("the development server and the production server", () => {
  it("answer every route of the table, and the ways to get it wrong, alike", { timeout: 240_000 }, async () => {
    const list = probes();
    expect(list.length).toBeGreaterThan(4 * API_ROUTES.length);
    const differences: string[] = [];
    for (const probe of list) {
      const [fromDev, fromProduction] = [await answer(dev, probe), await answer(production, probe)];
      try {
        expect(fromDev).toEqual(fromProduction);
      } catch {
        const changed = (Object.keys(fromDev) as (keyof typeof fromDev)[]).filter(
          (part) => JSON.stringify(fromDev[part]) !== JSON.stringify(fromProduction[part]),
        );
        const shown = (answer: typeof fromDev) => JSON.stringify(changed.map((part) => answer[part])).slice(0, 600);
        differences.push(`${probe.name}:\n  dev        ${shown(fromDev)}\n  production ${shown(fromProduction)}`);
      }
    }
    expect(differences.join("\n")).toBe("");
  });
});

// Issue #55: Next.js's development server printed a careless `?api_key=dak_...` whole in its request lines.
describe("the development server's output", () => {
  it("shows a key sent in the URL redacted, in every line", async () => {
    await fetch(`${dev.url}/api/v1/orders?limit=1&api_key=${fixtures.key}`).then((response) => response.text());
    await fetch(`${dev.url}/signin?api_key=${fixtures.key}`).then((response) => response.text());
    const output = await dev.loggedSoFar();
    expect(output).toContain("api_key=[redacted]");
    expect(output).not.toContain(fixtures.key);
    expect(output).not.toContain(fixtures.key.slice(4));
  });
});
