import { promises as fs } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_ERRORS, type ApiErrorCode } from "../../lib/http/problem";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../../lib/contract";
import { waitFor } from "../helpers/wait";
import { signDownloadToken } from "../../lib/downloads/token";
import { revokeApiKey } from "../../lib/keys";
import { generateSecret } from "../../lib/keys/secret";
import {
  disableSocialAccess,
  enableSocialAccess,
  importSocialProfiles,
  setPlatformAvailability,
} from "../../lib/social/admin";
import { db, Prisma } from "../../lib/db/client";
import { processPendingNow } from "../../lib/tables/pipeline";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { startOfAFixedWindow } from "../helpers/rate-limit";

/**
 * The contract's error table, over HTTP against the production server: one case (or more) for
 * every code the API and its download links answer with. The last test fails when a code of the
 * table (lib/http/problem.ts API_ERRORS) has no case here.
 */

let env: TestEnvironment;
let server: TestServer;
let downServer: TestServer;

const DAY = 86_400_000;
const fixtures = {} as {
  key: string;
  otherBuyersOrder: { id: string; fileId: string };
  delivered: { id: string; fileId: string };
  refunded: { id: string; fileId: string };
  unfinished: { id: string; fileId: string };
  scrapeKey: string;
  datasetsKeyOfSocialAccount: string;
  disabledScrapeKey: string;
  exhaustedScrapeKey: string;
  binary: { id: string; fileId: string };
  revokedKey: string;
  expiredKey: string;
  limitedKey: string;
  limitedSocialKey: string;
};

beforeAll(async () => {
  env = await createTestEnvironment("api_errors");
  process.env.AUTH_SECRET = TEST_AUTH_SECRET;
  const a = await buyer("errors-a");
  const withFile = async (status: "delivered" | "refunded" | "unfinished") => {
    // One row under the header: a table of no rows is held by the quality gate (row_count_zero, #40).
    const created = await order(a.id, { status, files: { [`${status}.csv`]: Buffer.from(`${status}\n1\n`) } });
    return { id: created.id, fileId: created.files[0]!.id };
  };
  fixtures.delivered = await withFile("delivered");
  fixtures.refunded = await withFile("refunded");
  fixtures.unfinished = await withFile("unfinished");
  // Each file is seen once its table's version is made (contract Part 8).
  await processPendingNow();
  const binary = await order(a.id, { files: { "blob.bin": Buffer.from([0, 1, 2]) } });
  fixtures.binary = { id: binary.id, fileId: binary.files[0]!.id };
  fixtures.key = (await apiKey(a.id)).secret;

  const b = await buyer("errors-b");
  const ofB = await order(b.id, { files: { "b.txt": Buffer.from("b\n") } });
  fixtures.otherBuyersOrder = { id: ofB.id, fileId: ofB.files[0]!.id };

  const revoked = await apiKey(a.id);
  await revokeApiKey(revoked.id);
  fixtures.revokedKey = revoked.secret;
  fixtures.expiredKey = (await apiKey(a.id, { createdAt: new Date(Date.now() - 31 * DAY) })).secret;
  fixtures.limitedKey = (await apiKey((await buyer("errors-limited")).id)).secret;

  const profiles = path.join(env.storageDir, "profiles.ndjson");
  await fs.writeFile(profiles, `${JSON.stringify({ platform: "instagram", handle: "nasa", name: "NASA" })}\n`);
  await importSocialProfiles(profiles);
  await setPlatformAvailability("tiktok", false, 120);
  const social = await buyer("errors-social");
  await enableSocialAccess(social.id, 100, 100);
  fixtures.scrapeKey = (await apiKey(social.id, { permission: "scrape:read" })).secret;
  fixtures.datasetsKeyOfSocialAccount = (await apiKey(social.id)).secret;
  const disabled = await buyer("errors-social-disabled");
  await enableSocialAccess(disabled.id, 100, 100);
  fixtures.disabledScrapeKey = (await apiKey(disabled.id, { permission: "scrape:read" })).secret;
  await disableSocialAccess(disabled.id);
  const exhausted = await buyer("errors-social-exhausted");
  await enableSocialAccess(exhausted.id, 1, 100);
  fixtures.exhaustedScrapeKey = (await apiKey(exhausted.id, { permission: "scrape:read" })).secret;
  const limitedSocial = await buyer("errors-social-limited");
  await enableSocialAccess(limitedSocial.id, 100, 1);
  fixtures.limitedSocialKey = (await apiKey(limitedSocial.id, { permission: "scrape:read" })).secret;

  [server, downServer] = await Promise.all([
    // A subset quota of one byte: any subset is too large (subset_too_large).
    startServer({
      databaseUrl: env.database.url,
      storageDir: env.storageDir,
      env: { REDIS_URL: "", SUBSET_QUOTA_BYTES: "1" },
    }),
    startServer({
      databaseUrl: "postgresql://postgres@127.0.0.1:1/none",
      storageDir: env.storageDir,
      readyPath: "/api/v1/openapi.json",
    }),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all([server?.stop(), downServer?.stop()]);
  await env?.cleanup();
});

function api(pathAndQuery: string, key?: string, init: RequestInit = {}, base = server.url) {
  const headers = new Headers(init.headers);
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return fetch(`${base}/api/v1${pathAndQuery}`, { redirect: "manual", ...init, headers });
}

async function signedLink(target: { id: string; fileId: string }): Promise<string> {
  const response = await api(`/orders/${target.id}/files/${target.fileId}`, fixtures.key);
  expect(response.status).toBe(302);
  return response.headers.get("location")!;
}

type Case = { name: string; code: ApiErrorCode; request: () => Promise<Response>; detail?: RegExp };
const file = (target: { id: string; fileId: string }) => `/orders/${target.id}/files/${target.fileId}`;

const cases: Case[] = [
  { name: "limit 0", code: "invalid_request", request: () => api("/orders?limit=0", fixtures.key), detail: /limit/ },
  {
    name: "limit 51",
    code: "invalid_request",
    request: () => api("/orders?limit=51", fixtures.key),
    detail: /limit must be from 1 to 50/,
  },
  {
    name: "limit not a number",
    code: "invalid_request",
    request: () => api("/orders?limit=ten", fixtures.key),
    detail: /limit must be a whole number/,
  },
  { name: "limit 1.5", code: "invalid_request", request: () => api("/orders?limit=1.5", fixtures.key) },
  {
    name: "offset -1",
    code: "invalid_request",
    request: () => api("/orders?offset=-1", fixtures.key),
    // -1 is a whole number: the rule it breaks is the one to say.
    detail: /^Invalid offset: offset must be 0 or more\.$/,
  },
  {
    name: "a missing handle",
    code: "invalid_request",
    request: () => api("/scrape/instagram/profile", fixtures.scrapeKey),
    detail: /handle/,
  },
  {
    name: "a malformed handle",
    code: "invalid_request",
    request: () => api("/scrape/x/profile?handle=no%20spaces%20allowed", fixtures.scrapeKey),
    detail: /not a valid x handle/,
  },
  {
    name: "no Authorization",
    code: "missing_api_key",
    request: () => api("/orders"),
    detail: /Authorization: Bearer/,
  },
  {
    name: "Basic auth",
    code: "missing_api_key",
    request: () => api("/orders", undefined, { headers: { Authorization: "Basic abc" } }),
  },
  {
    name: "empty Bearer",
    code: "missing_api_key",
    request: () => api("/orders", undefined, { headers: { Authorization: "Bearer " } }),
  },
  { name: "an unknown well-formed key", code: "invalid_api_key", request: () => api("/orders", generateSecret()) },
  { name: "a garbage key", code: "invalid_api_key", request: () => api("/orders", "dak_notakey") },
  {
    name: "an expired key",
    code: "expired_api_key",
    request: () => api("/orders", fixtures.expiredKey),
    detail: /replacement key in the dashboard/,
  },
  { name: "a revoked key", code: "revoked_api_key", request: () => api("/orders", fixtures.revokedKey) },
  {
    name: "a scrape:read key on the orders",
    code: "insufficient_permission",
    request: () => api("/orders", fixtures.scrapeKey),
    detail: /datasets:read/,
  },
  {
    name: "a datasets:read key on the Social API",
    code: "insufficient_permission",
    request: () => api("/scrape/instagram/profile?handle=nasa", fixtures.datasetsKeyOfSocialAccount),
    detail: /scrape:read/,
  },
  {
    name: "a scrape:read key of an account whose Social API access was disabled",
    code: "social_access_disabled",
    request: () => api("/scrape/instagram/profile?handle=nasa", fixtures.disabledScrapeKey),
  },
  {
    name: "a tampered download link",
    code: "download_link_invalid",
    request: async () => {
      const link = await signedLink(fixtures.delivered);
      return fetch(link.slice(0, -2) + (link.endsWith("A") ? "BB" : "AA"));
    },
  },
  {
    name: "an unknown order",
    code: "order_not_found",
    request: () => api("/orders/ord_00000000000000000000000000000000", fixtures.key),
  },
  {
    name: "another buyer's order",
    code: "order_not_found",
    request: () => api(`/orders/${fixtures.otherBuyersOrder.id}`, fixtures.key),
  },
  {
    name: "another buyer's file",
    code: "order_not_found",
    request: () => api(file(fixtures.otherBuyersOrder), fixtures.key),
  },
  { name: "a malformed order id", code: "order_not_found", request: () => api("/orders/ord_%00", fixtures.key) },
  {
    name: "an unknown table",
    code: "table_not_found",
    request: () => api(`/orders/${fixtures.delivered.id}/tables/no_such_table`, fixtures.key),
  },
  {
    name: "a version never made",
    code: "version_not_found",
    // delivered.csv was published as the table "delivered" (order:add-file's own table).
    request: () => api(`/orders/${fixtures.delivered.id}/tables/delivered/versions/99`, fixtures.key),
  },
  {
    name: "the quality report of a version made before reports existed",
    code: "quality_report_not_found",
    request: async () => {
      // Version 1 of "delivered", made here if the server's worker has not yet, with no report (as before Part 6).
      await processPendingNow();
      await db().tablePublication.updateMany({
        where: { table: { orderId: fixtures.delivered.id, name: "delivered" } },
        data: { report: Prisma.DbNull },
      });
      return api(`/orders/${fixtures.delivered.id}/tables/delivered/versions/1/quality`, fixtures.key);
    },
  },
  {
    name: "a filter with a second statement",
    code: "invalid_filter",
    detail: /";" is not allowed/,
    request: () => api(`/orders/${fixtures.delivered.id}/tables/delivered/rows?where=1%3D1%3B`, fixtures.key),
  },
  {
    name: "rows of a column the table lacks",
    code: "unknown_column",
    detail: /no column "nope"/,
    request: async () => {
      // The table's first version is made by the server's worker after the order was created.
      await waitFor(
        async () =>
          (await db().orderTable.findFirst({ where: { orderId: fixtures.delivered.id, name: "delivered" } }))
            ?.currentVersion != null,
        120_000,
        "the table delivered to have a version",
      );
      return api(`/orders/${fixtures.delivered.id}/tables/delivered/rows?columns=nope`, fixtures.key);
    },
  },
  {
    name: "a third subset while two of the account's are being made",
    code: "too_many_queries",
    detail: /^2 of your subsets are being made/,
    request: async () => {
      // Two of its subsets taken by a worker (for the next hour): the account's 2.
      const taken = await db().$queryRaw<{ id: string }[]>`
        INSERT INTO table_subsets (order_id, table_id, version, columns, format, request_key, expires_at, started_at)
        SELECT t.order_id, t.id, 1, ARRAY['delivered'], 'csv'::rendition_format, repeat('0', 63) || n, now() + interval '1 hour', now()
        FROM order_tables t, generate_series(1, 2) n WHERE t.order_id = ${fixtures.delivered.id} AND t.name = 'delivered'
        RETURNING id`;
      expect(taken).toHaveLength(2);
      try {
        return await api(`/orders/${fixtures.delivered.id}/tables/delivered/subset`, fixtures.key);
      } finally {
        await db().tableSubset.deleteMany({ where: { id: { in: taken.map((row) => row.id) } } });
      }
    },
  },
  {
    name: "a subset larger than the account's subset quota",
    code: "subset_too_large",
    detail: /^The subset is \d+ B, more than the 1 B of subsets an account keeps/,
    request: async () => {
      const url = `/orders/${fixtures.delivered.id}/tables/delivered/subset?format=csv`;
      let answer = await api(url, fixtures.key);
      // Made by the worker, then refused: answered once the job is done.
      await waitFor(async () => (answer = await api(url, fixtures.key)).status !== 202, 120_000, "the subset job");
      return answer;
    },
  },
  {
    name: "SQL whose one row is larger than the 8 MiB answer budget",
    code: "answer_too_large",
    detail:
      /^One row of this answer is larger than an answer may be \(8.4 MB, with its 2500 columns\); the widest: "l" /,
    request: () => {
      // 2,500 columns of a 4 KB list (a cell's JSON is shown whole up to 4,096 characters): 10 MB in one row.
      const list = "[repeat('a', 1000), repeat('b', 1000), repeat('c', 1000), repeat('d', 1000)]";
      const q = `WITH x AS (SELECT ${list} AS l) SELECT ${Array(2500).fill("l").join(",")} FROM x`;
      return api(`/orders/${fixtures.delivered.id}/sql?${new URLSearchParams({ q })}`, fixtures.key);
    },
  },
  {
    name: "SQL that is not one SELECT",
    code: "invalid_sql",
    detail: /only one read-only query/,
    request: () => api(`/orders/${fixtures.delivered.id}/sql?q=ATTACH%20'x.db'`, fixtures.key),
  },
  {
    name: "SQL past its engine time",
    code: "query_timeout",
    detail: /narrow it/,
    request: () =>
      api(
        `/orders/${fixtures.delivered.id}/sql?q=${encodeURIComponent("SELECT count(*) FROM range(1000000000000000000)")}`,
        fixtures.key,
      ),
  },
  {
    name: "an unknown export run",
    code: "export_not_found",
    request: () => api("/exports/exr_00000000000000000000000000000000", fixtures.key),
  },
  {
    name: "an unknown file",
    code: "file_not_found",
    request: () => api(`/orders/${fixtures.delivered.id}/files/fil_00000000000000000000000000000000`, fixtures.key),
  },
  {
    name: "a file of another order",
    code: "file_not_found",
    request: () => api(`/orders/${fixtures.delivered.id}/files/${fixtures.refunded.fileId}`, fixtures.key),
  },
  {
    name: "a malformed file id",
    code: "file_not_found",
    request: () => api(`/orders/${fixtures.delivered.id}/files/fil_%00`, fixtures.key),
  },
  {
    name: "a preview of a binary file",
    code: "preview_not_available",
    request: () => api(`${file(fixtures.binary)}/preview`, fixtures.key),
    detail: /binary/,
  },
  {
    name: "a Parquet rendition of a binary file",
    code: "preview_not_available",
    request: () => api(`${file(fixtures.binary)}?format=parquet`, fixtures.key),
    detail: /binary/,
  },
  {
    name: "a JSON Lines rendition asked for the first time",
    code: "rendition_pending",
    request: () => api(`${file(fixtures.delivered)}?format=jsonl`, fixtures.key),
    detail: /being made/,
  },
  {
    name: "an unknown platform",
    code: "platform_not_supported",
    request: () => api("/scrape/myspace/profile?handle=nasa", fixtures.scrapeKey),
  },
  {
    name: "no stored profile",
    code: "profile_not_found",
    request: () => api("/scrape/instagram/profile?handle=nobody_here", fixtures.scrapeKey),
  },
  { name: "an unknown API path", code: "not_found", request: () => api("/invoices", fixtures.key) },
  {
    name: "POST on the orders",
    code: "method_not_allowed",
    request: () => api("/orders", fixtures.key, { method: "POST" }),
    detail: /POST is not allowed/,
  },
  {
    name: "DELETE on a download link",
    code: "method_not_allowed",
    request: async () => fetch(await signedLink(fixtures.delivered), { method: "DELETE" }),
  },
  {
    name: "a refunded order's file",
    code: "order_not_delivered",
    request: () => api(file(fixtures.refunded), fixtures.key),
    detail: /refunded/,
  },
  {
    name: "an unfinished order's file",
    code: "order_not_delivered",
    request: () => api(file(fixtures.unfinished), fixtures.key),
    detail: /unfinished/,
  },
  {
    name: "an expired download link",
    code: "download_link_expired",
    request: () =>
      fetch(
        `${server.url}/api/dl/${signDownloadToken({ fileId: fixtures.delivered.fileId, expiresAt: new Date(Date.now() - 1000) })}`,
      ),
    detail: new RegExp(`valid for ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes`),
  },
  {
    name: "a range past the end of the file",
    code: "range_not_satisfiable",
    request: async () => fetch(await signedLink(fixtures.delivered), { headers: { Range: "bytes=1000-" } }),
  },
  {
    name: "the 61st dataset request of an account within a minute",
    code: "rate_limited",
    request: async () => {
      await startOfAFixedWindow();
      for (let i = 0; i < 60; i++) expect((await api("/orders?limit=1", fixtures.limitedKey)).status).toBe(200);
      return api("/orders?limit=1", fixtures.limitedKey);
    },
  },
  {
    name: "the second social request of an account with a rate of 1 per minute",
    code: "rate_limited",
    request: async () => {
      await api("/scrape/instagram/profile?handle=nasa", fixtures.limitedSocialKey);
      return api("/scrape/instagram/profile?handle=nasa", fixtures.limitedSocialKey);
    },
  },
  {
    name: "a read past the monthly allowance",
    code: "social_allowance_exhausted",
    request: async () => {
      expect((await api("/scrape/instagram/profile?handle=nasa", fixtures.exhaustedScrapeKey)).status).toBe(200);
      return api("/scrape/instagram/profile?handle=nasa", fixtures.exhaustedScrapeKey);
    },
  },
  {
    name: "a platform whose source is down",
    code: "social_unavailable",
    request: () => api("/scrape/tiktok/profile?handle=nasa", fixtures.scrapeKey),
  },
  {
    name: "a database that cannot be reached",
    code: "service_unavailable",
    request: () => api("/orders", fixtures.key, {}, downServer.url),
  },
];

describe("every error code of the contract's table, over HTTP", () => {
  it.each(cases)("$code: $name", async ({ code, request, detail }) => {
    const response = await request();
    const body = await expectProblem(response, API_ERRORS[code].status, code, detail);
    expect(body.detail).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|\u0000/);
    if (code === "method_not_allowed") expect(response.headers.get("allow")).toBe("GET, HEAD");
    const waits: ApiErrorCode[] = [
      "rate_limited",
      "social_allowance_exhausted",
      "social_unavailable",
      "service_unavailable",
      "rendition_pending",
      "too_many_queries",
    ];
    if (waits.includes(code)) {
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    if (code === "range_not_satisfiable") expect(response.headers.get("content-range")).toMatch(/^bytes \*\/\d+$/);
  });

  it("has a case for every code of the table", () => {
    const covered = new Set(cases.map((testCase) => testCase.code));
    expect(Object.keys(API_ERRORS).filter((code) => !covered.has(code as ApiErrorCode))).toEqual([]);
  });
});
