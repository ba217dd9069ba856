import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorCatalog } from "../../lib/http/problem";
import { API_PATHS } from "../../lib/api/routes";
import { revokeApiKey } from "../../lib/keys";
import { setOrderStatus } from "../../lib/operator/orders";
import { orderPageSchema, orderSchema } from "../../lib/schemas/api";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;

const DAY = 86_400_000;
const sha256 = (bytes: Buffer | Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const bigFile = randomBytes(3 * 1024 * 1024 + 17);

// Buyer A: one order of each status. Buyer B: an order of their own. Pager: 45 orders.
let a: { id: string };
let keyA: string;
let keyB: string;
let delivered: Awaited<ReturnType<typeof order>>;
let refunded: Awaited<ReturnType<typeof order>>;
let unfinished: Awaited<ReturnType<typeof order>>;
let pagerKey: string;
let pagerOrderIds: string[];

beforeAll(async () => {
  env = await createTestEnvironment("api_orders");
  a = await buyer("a");
  const b = await buyer("b");
  delivered = await order(a.id, {
    name: "Delivered",
    paidAt: new Date(Date.now() - 3 * DAY),
    // Binary files, listed at once: a data file added on its own is a table's publication, which no
    // buyer sees until it is a version (contract Part 8; tests/tables/unseen.test.ts).
    files: { "prices.bin": bigFile, "notes.txt": Buffer.from("hello\n") },
  });
  refunded = await order(a.id, { name: "Refunded", status: "refunded", files: { "r.txt": Buffer.from("r\n") } });
  unfinished = await order(a.id, { name: "Unfinished", status: "unfinished", files: { "u.txt": Buffer.from("u\n") } });
  // B's order must never show in A's list.
  await order(b.id, { name: "B's", files: { "b.txt": Buffer.from("b\n") } });
  keyA = (await apiKey(a.id)).secret;
  keyB = (await apiKey(b.id)).secret;

  // 45 orders; groups of five share a paid_at, so the id tiebreak decides their order.
  const pager = await buyer("pager");
  pagerKey = (await apiKey(pager.id)).secret;
  const base = Date.now() - 10 * DAY;
  const created = [];
  for (let i = 0; i < 45; i++) {
    created.push(await order(pager.id, { name: `Order ${i}`, paidAt: new Date(base + Math.floor(i / 5) * 60_000) }));
  }
  pagerOrderIds = created
    .map((o, i) => ({ id: o.id, paid: Math.floor(i / 5) }))
    .sort((x, y) => y.paid - x.paid || (x.id < y.id ? 1 : -1))
    .map((o) => o.id);

  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

function api(path: string, key?: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return fetch(`${server.url}/api/v1${path}`, { redirect: "manual", ...init, headers });
}

describe("keys", () => {
  it("refuses a revoked key and an expired key on the very next request", async () => {
    const revocable = await apiKey(a.id);
    expect((await api("/orders", revocable.secret)).status).toBe(200);
    await revokeApiKey(revocable.id);
    await expectProblem(await api("/orders", revocable.secret), 401, "revoked_api_key");

    // Created 30 days minus 2 seconds ago with a 30-day expiry: valid now, expired in 2 s.
    const expiring = await apiKey(a.id, { createdAt: new Date(Date.now() - 30 * DAY + 2000) });
    expect((await api("/orders", expiring.secret)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const body = await expectProblem(await api("/orders", expiring.secret), 401, "expired_api_key");
    expect(body.detail).toMatch(/replacement key in the dashboard/);
  });
});

describe("orders", () => {
  it("pages through 45 orders newest first with exact next_offset", async () => {
    const seen: string[] = [];
    const offsets: (number | null)[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const response = await api(`/orders?limit=20&offset=${offset}`, pagerKey);
      expect(response.status).toBe(200);
      const page = orderPageSchema.parse(await response.json());
      seen.push(...page.data.map((o) => o.id));
      offsets.push(page.next_offset);
      offset = page.next_offset;
    }
    expect(offsets).toEqual([20, 40, null]);
    expect(seen).toEqual(pagerOrderIds);
  });

  it("defaults to 20 per page and ends with next_offset null", async () => {
    const page = orderPageSchema.parse(await (await api("/orders", pagerKey)).json());
    expect(page.data).toHaveLength(20);
    expect(page.next_offset).toBe(20);
    const beyond = orderPageSchema.parse(await (await api("/orders?offset=45", pagerKey)).json());
    expect(beyond).toEqual({ data: [], next_offset: null });
  });

  it("lists and reads only the buyer's own orders, with the contract's fields", async () => {
    const page = orderPageSchema.parse(await (await api("/orders", keyA)).json());
    expect(page.data.map((o) => o.id).sort()).toEqual([delivered.id, refunded.id, unfinished.id].sort());
    expect(page.next_offset).toBeNull();

    const response = await api(`/orders/${delivered.id}`, keyA);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = await response.json();
    expect(Object.keys(body).sort()).toEqual([
      "delivered_at",
      "downloadable",
      "files",
      "id",
      "name",
      "paid_at",
      "status",
      "tables",
    ]);
    expect(orderSchema.parse(body)).toMatchObject({ id: delivered.id, status: "delivered", downloadable: true });
    expect(body.files[0]).toEqual({
      id: delivered.files[0]!.id,
      name: "prices.bin",
      size: bigFile.length,
      content_type: "application/octet-stream",
      sha256: sha256(bigFile),
      created_at: expect.stringMatching(/Z$/),
      format: "binary",
      compression: null,
      profile_status: "none",
      rows: null,
      columns: null,
      profile_error: null,
      renditions: [],
      table: null,
    });
    expect(body.tables).toEqual([]);
    const refundedBody = orderSchema.parse(await (await api(`/orders/${refunded.id}`, keyA)).json());
    expect(refundedBody.downloadable).toBe(false);
  });

  it("sends rate-limit headers and the request id on every counted response", async () => {
    const response = await api("/orders", keyB, { headers: { "X-Request-Id": "client-trace.42" } });
    expect(response.headers.get("x-request-id")).toBe("client-trace.42");
    expect(response.headers.get("ratelimit-policy")).toBe('"datasets";q=60;w=60');
    expect(response.headers.get("ratelimit")).toMatch(/^"datasets";r=\d+;t=\d+$/);
    const invalid = await api("/orders", keyB, { headers: { "X-Request-Id": "bad id with spaces" } });
    expect(invalid.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

// Run with STORAGE_DRIVER=s3 too (.ci/run): the same downloads, served by the object store.
const objectStorage = process.env.STORAGE_DRIVER === "s3";

describe(`downloads (${objectStorage ? "s3" : "local"} storage)`, () => {
  it("redirects to a short-lived link that serves the bytes, resumable with Range", async () => {
    const redirect = await api(`/orders/${delivered.id}/files/${delivered.files[0]!.id}`, keyA);
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get("location")!;
    expect(location).toMatch(new RegExp(`^${objectStorage ? process.env.S3_ENDPOINT : `${server.url}/api/dl/`}`));

    const half = Math.floor(bigFile.length / 2);
    const first = await fetch(location, { headers: { Range: `bytes=0-${half - 1}` } });
    expect(first.status).toBe(206);
    const firstBytes = Buffer.from(await first.arrayBuffer());
    const rest = await fetch(location, {
      headers: { Range: `bytes=${half}-`, "If-Range": first.headers.get("etag")! },
    });
    expect(rest.status).toBe(206);
    expect(rest.headers.get("content-range")).toBe(`bytes ${half}-${bigFile.length - 1}/${bigFile.length}`);
    const joined = Buffer.concat([firstBytes, Buffer.from(await rest.arrayBuffer())]);
    expect(sha256(joined)).toBe(delivered.files[0]!.sha256);

    const whole = await fetch(location);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-length")).toBe(String(bigFile.length));
    expect(whole.headers.get("content-disposition")).toMatch(/^attachment; filename="prices.bin"/);
    expect(whole.headers.get("content-type")).toBe("application/octet-stream");
    expect(whole.headers.get("etag")).toBe(objectStorage ? first.headers.get("etag") : `"${sha256(bigFile)}"`);
    expect(sha256(Buffer.from(await whole.arrayBuffer()))).toBe(sha256(bigFile));

    // A presigned URL is signed for GET only: HEAD belongs to the local driver's links.
    if (!objectStorage) {
      expect(whole.headers.get("accept-ranges")).toBe("bytes");
      const head = await fetch(location, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-length")).toBe(String(bigFile.length));
      expect(head.headers.get("content-type")).toBe("application/octet-stream");
    }
  });

  it("checks the order's status, and refuses tampered links", async () => {
    const target = await order(a.id, { name: "Soon refunded", files: { "x.txt": Buffer.from("x\n") } });
    const download = () => api(`/orders/${target.id}/files/${target.files[0]!.id}`, keyA);
    const location = (await download()).headers.get("location")!;
    const tampered = location.slice(0, -2) + (location.endsWith("A") ? "BB" : "AA");
    await setOrderStatus(target.id, "refunded");
    await expectProblem(await download(), 409, "order_not_delivered");
    if (objectStorage) {
      // The store checks the signature; the status was checked when the link was issued.
      expect((await fetch(tampered)).status).toBe(403);
    } else {
      // A local link re-checks the status on every request.
      await expectProblem(await fetch(location), 409, "order_not_delivered");
      await expectProblem(await fetch(tampered), 403, "download_link_invalid");
    }
  });
});

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1, public, and describes the endpoints and schemas", async () => {
    const response = await fetch(`${server.url}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    const document = await response.json();
    expect(document.openapi).toBe("3.1.0");
    expect(Object.keys(document.paths).sort()).toEqual([...API_PATHS].sort());
    expect(API_PATHS).toEqual(expect.arrayContaining(["/orders", "/orders/{id}", "/scrape/{platform}/profile"]));
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining(["Order", "File", "OrderPage", "Problem", "SocialProfile"]),
    );
    expect(document.components.schemas.SocialProfile.required).toEqual(
      expect.arrayContaining(["platform", "handle", "profile", "fetched_at"]),
    );
    const social = document.paths["/scrape/{platform}/profile"].get;
    expect(social.parameters.find((p: { name: string }) => p.name === "platform").schema.enum).toEqual([
      "instagram",
      "tiktok",
      "x",
      "youtube",
      "linkedin",
    ]);
    expect(Object.keys(social.responses).sort()).toEqual(["200", "400", "401", "403", "404", "429", "503"]);
    expect(document.components.schemas.Order.required).toEqual(
      expect.arrayContaining(["id", "status", "name", "paid_at", "delivered_at", "downloadable", "files"]),
    );
  });
});

describe("the API reference page", () => {
  it("documents every error code at the anchor its problem type points to, with curl examples", async () => {
    const response = await fetch(`${server.url}/docs/api`);
    expect(response.status).toBe(200);
    const html = await response.text();
    for (const { code } of apiErrorCatalog()) expect(html).toContain(`id="error-${code}"`);
    expect(html).toContain("curl --fail -L");
    expect(html).toContain(`${server.url}/api/v1/orders`);
  });
});
