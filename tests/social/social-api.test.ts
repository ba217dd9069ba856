import { promises as fs } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import {
  enableSocialAccess,
  disableSocialAccess,
  importSocialProfiles,
  setPlatformAvailability,
} from "../../lib/social/admin";
import { allowancePeriod } from "../../lib/social/access";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startOfAFixedWindow } from "../helpers/rate-limit";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;

/** An account with Social API access and its two kinds of key. */
async function socialAccount(label: string, settings: { allowance: number; ratePerMinute: number }) {
  const account = await buyer(label);
  await enableSocialAccess(account.id, settings.allowance, settings.ratePerMinute);
  return {
    ...account,
    scrapeKey: (await apiKey(account.id, { permission: "scrape:read" })).secret,
    datasetsKey: (await apiKey(account.id)).secret,
  };
}

async function usedThisMonth(buyerId: string): Promise<number> {
  const usage = await db().socialUsage.findMany({ where: { buyerId } });
  return usage.reduce((sum, row) => sum + row.used, 0);
}

const get = (pathAndQuery: string, key?: string) =>
  fetch(`${server.url}/api/v1${pathAndQuery}`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });

beforeAll(async () => {
  env = await createTestEnvironment("social_api");
  const ndjson = path.join(env.storageDir, "profiles.ndjson");
  await fs.writeFile(
    ndjson,
    [
      {
        platform: "instagram",
        handle: "@NASA",
        fetched_at: "2026-11-20T08:00:00Z",
        profile: { name: "NASA", followers: 97000000 },
      },
      { platform: "x", handle: "nasa", name: "NASA", followers: 89000000 },
      { platform: "tiktok", handle: "nasa", name: "NASA" },
    ]
      .map((line) => JSON.stringify(line))
      .join("\n"),
  );
  expect((await importSocialProfiles(ndjson)).imported).toBe(3);
  await setPlatformAvailability("tiktok", false, 120);
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
});
afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

describe("GET /api/v1/scrape/{platform}/profile", () => {
  it("returns the stored profile and the allowance left", async () => {
    const account = await socialAccount("social-ok", { allowance: 100, ratePerMinute: 100 });
    const response = await get("/scrape/instagram/profile?handle=@NaSa", account.scrapeKey);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      platform: "instagram",
      handle: "nasa",
      profile: { name: "NASA", followers: 97000000 },
      fetched_at: "2026-11-20T08:00:00.000Z",
    });
    expect(response.headers.get("social-allowance-limit")).toBe("100");
    expect(response.headers.get("social-allowance-remaining")).toBe("99");
    expect(response.headers.get("social-allowance-reset")).toBe(allowancePeriod(new Date()).end.toISOString());
    expect(response.headers.get("ratelimit-policy")).toBe('"social";q=100;w=60');
    expect(response.headers.get("ratelimit")).toMatch(/^"social";r=99;t=\d+$/);
  });

  // One case per status and code of the contract that applies to this endpoint.
  const cases: {
    name: string;
    status: number;
    code: string;
    request: (account: Awaited<ReturnType<typeof socialAccount>>) => Promise<Response>;
  }[] = [
    {
      name: "no handle",
      status: 400,
      code: "invalid_request",
      request: (a) => get("/scrape/instagram/profile", a.scrapeKey),
    },
    {
      name: "a malformed handle",
      status: 400,
      code: "invalid_request",
      request: (a) => get("/scrape/x/profile?handle=not%20a%20handle!", a.scrapeKey),
    },
    {
      name: "no key",
      status: 401,
      code: "missing_api_key",
      request: () => get("/scrape/instagram/profile?handle=nasa"),
    },
    {
      name: "a datasets:read key on the social endpoint",
      status: 403,
      code: "insufficient_permission",
      request: (a) => get("/scrape/instagram/profile?handle=nasa", a.datasetsKey),
    },
    {
      name: "a scrape:read key on the order endpoints",
      status: 403,
      code: "insufficient_permission",
      request: (a) => get("/orders", a.scrapeKey),
    },
    {
      name: "an unknown platform",
      status: 404,
      code: "platform_not_supported",
      request: (a) => get("/scrape/myspace/profile?handle=nasa", a.scrapeKey),
    },
    {
      name: "a handle without a stored profile",
      status: 404,
      code: "profile_not_found",
      request: (a) => get("/scrape/instagram/profile?handle=nobody_here", a.scrapeKey),
    },
    {
      name: "a platform whose source is down",
      status: 503,
      code: "social_unavailable",
      request: (a) => get("/scrape/tiktok/profile?handle=nasa", a.scrapeKey),
    },
  ];
  it.each(cases)("$status $code: $name", async ({ status, code, request }) => {
    const account = await socialAccount(`social-${code}`, { allowance: 100, ratePerMinute: 100 });
    const response = await request(account);
    await expectProblem(response, status, code);
    if (code === "social_unavailable") expect(response.headers.get("retry-after")).toBe("120");
    // Refusals after the platform is known use none of the allowance, and say so.
    if (status === 404 && code === "profile_not_found")
      expect(response.headers.get("social-allowance-remaining")).toBe("100");
  });

  it("403 social_access_disabled: a scrape:read key of an account whose access was disabled", async () => {
    const account = await socialAccount("social-disabled", { allowance: 100, ratePerMinute: 100 });
    await disableSocialAccess(account.id);
    const response = await get("/scrape/instagram/profile?handle=nasa", account.scrapeKey);
    await expectProblem(response, 403, "social_access_disabled");
  });

  it("429 rate_limited: every request counts toward the account's rate, found or not", async () => {
    const account = await socialAccount("social-rate", { allowance: 100, ratePerMinute: 3 });
    await startOfAFixedWindow();
    const statuses = [];
    for (const handle of ["nasa", "nobody_here", "nasa"]) {
      statuses.push((await get(`/scrape/instagram/profile?handle=${handle}`, account.scrapeKey)).status);
    }
    expect(statuses).toEqual([200, 404, 200]);
    const refused = await get("/scrape/instagram/profile?handle=nasa", account.scrapeKey);
    await expectProblem(refused, 429, "rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("ratelimit")).toMatch(/^"social";r=0;t=\d+$/);
    expect(await usedThisMonth(account.id)).toBe(2);
  });

  it("HEAD answers like GET without a body and takes nothing from the allowance", async () => {
    const account = await socialAccount("social-head", { allowance: 100, ratePerMinute: 100 });
    const response = await fetch(`${server.url}/api/v1/scrape/instagram/profile?handle=nasa`, {
      method: "HEAD",
      headers: { Authorization: `Bearer ${account.scrapeKey}` },
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
    expect(response.headers.get("social-allowance-remaining")).toBe("100");
    expect(await usedThisMonth(account.id)).toBe(0);
    const post = await fetch(`${server.url}/api/v1/scrape/instagram/profile?handle=nasa`, {
      method: "POST",
      headers: { Authorization: `Bearer ${account.scrapeKey}` },
    });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("429 social_allowance_exhausted: only successful reads count, Retry-After runs to the month's end", async () => {
    const account = await socialAccount("social-allowance", { allowance: 2, ratePerMinute: 100 });
    const remaining = [];
    for (const handle of ["nasa", "nobody_here", "nasa"]) {
      const response = await get(`/scrape/instagram/profile?handle=${handle}`, account.scrapeKey);
      remaining.push([response.status, response.headers.get("social-allowance-remaining")]);
    }
    expect(remaining).toEqual([
      [200, "1"],
      [404, "1"],
      [200, "0"],
    ]);
    const refused = await get("/scrape/x/profile?handle=nasa", account.scrapeKey);
    await expectProblem(refused, 429, "social_allowance_exhausted");
    const untilReset = (allowancePeriod(new Date()).end.getTime() - Date.now()) / 1000;
    expect(Math.abs(Number(refused.headers.get("retry-after")) - untilReset)).toBeLessThan(5);
    expect(refused.headers.get("social-allowance-remaining")).toBe("0");
  });

  it("counts exactly under concurrency: 50 parallel reads against an allowance of 20", async () => {
    const account = await socialAccount("social-concurrent", { allowance: 20, ratePerMinute: 1000 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => get("/scrape/instagram/profile?handle=nasa", account.scrapeKey)),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(30);
    const codes = await Promise.all(responses.filter((r) => r.status === 429).map(async (r) => (await r.json()).code));
    expect(new Set(codes)).toEqual(new Set(["social_allowance_exhausted"]));
    // Every granted read saw a different count: 19, 18, ... 0 left.
    const left = responses
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers.get("social-allowance-remaining")));
    expect(left.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const usage = await db().socialUsage.findMany({ where: { buyerId: account.id } });
    expect(usage.map((row) => row.used)).toEqual([20]);
  });
});

describe("the month rollover over HTTP, on an injected clock (CLOCK_START), without waiting", () => {
  it("refuses at the end of November and serves again on 1 December", async () => {
    const account = await socialAccount("social-rollover", { allowance: 2, ratePerMinute: 100 });
    const serverAt = (instant: string) =>
      startServer({
        databaseUrl: env.database.url,
        storageDir: env.storageDir,
        env: { REDIS_URL: "", CLOCK_START: instant },
      });
    const read = (base: TestServer) =>
      fetch(`${base.url}/api/v1/scrape/instagram/profile?handle=nasa`, {
        headers: { Authorization: `Bearer ${account.scrapeKey}` },
      });

    const november = await serverAt("2026-11-30T23:59:00.000Z");
    try {
      expect((await read(november)).headers.get("social-allowance-remaining")).toBe("1");
      expect((await read(november)).headers.get("social-allowance-remaining")).toBe("0");
      const refused = await read(november);
      await expectProblem(refused, 429, "social_allowance_exhausted");
      expect(refused.headers.get("social-allowance-reset")).toBe("2026-12-01T00:00:00.000Z");
      // About a minute to go on the injected clock (less the time the server took to start).
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(30);
      expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    } finally {
      await november.stop();
    }

    const december = await serverAt("2026-12-01T00:00:00.000Z");
    try {
      const served = await read(december);
      expect(served.status).toBe(200);
      expect(served.headers.get("social-allowance-remaining")).toBe("1");
      expect(served.headers.get("social-allowance-reset")).toBe("2027-01-01T00:00:00.000Z");
    } finally {
      await december.stop();
    }
    const usage = await db().socialUsage.findMany({ where: { buyerId: account.id }, orderBy: { periodStart: "asc" } });
    expect(usage.map((row) => [row.periodStart.toISOString().slice(0, 10), row.used])).toEqual([
      ["2026-11-01", 2],
      ["2026-12-01", 1],
    ]);
  });
});
