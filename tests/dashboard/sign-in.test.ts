import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIGNIN_LIMITS } from "../../lib/auth/signin-limits";
import { db } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("dashboard_signin");
});
afterAll(async () => {
  await env?.cleanup();
});

/** next-auth's sign-in request, as its client sends it: CSRF token from /api/auth/csrf, double-submitted. */
async function requestSignIn(server: TestServer, email: string, action = "signin/email") {
  const csrf = await fetch(`${server.url}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const cookie = csrf.headers
    .getSetCookie()
    .map((header) => header.split(";")[0])
    .join("; ");
  const response = await fetch(`${server.url}/api/auth/${action}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie },
    body: new URLSearchParams({ email, csrfToken, callbackUrl: "/orders", json: "true" }),
    redirect: "manual",
  });
  return { status: response.status, url: ((await response.json()) as { url: string }).url, headers: response.headers };
}

describe("sign-in on a production server", () => {
  it("without SMTP refuses to start sign-in, with a clear error", async () => {
    const server = await startServer({
      databaseUrl: env.database.url,
      storageDir: env.storageDir,
      env: { EMAIL_SERVER: "" },
    });
    try {
      const refused = await requestSignIn(server, "buyer@example.com");
      expect(refused.status).toBe(503);
      expect(new URL(refused.url).searchParams.get("error")).toBe("EmailNotConfigured");
      const page = await (await fetch(`${server.url}/signin`)).text();
      expect(page).toContain("E-mail sign-in is not configured on this server: set EMAIL_SERVER");
      expect((await fetch(`${server.url}/dev/mailbox`)).status).toBe(404);
      expect(server.output()).toContain("E-mail sign-in is not configured");
    } finally {
      await server.stop();
    }
  });

  it("limits sign-in requests per e-mail address and per client IP", async () => {
    // Unknown addresses: the limits count every request, and no e-mail is sent, so no SMTP server is needed.
    // In-process counts, so every run starts from zero (a shared Redis keeps 127.0.0.1's for 15 minutes).
    const server = await startServer({
      databaseUrl: env.database.url,
      storageDir: env.storageDir,
      withAppUrl: true,
      env: { EMAIL_SERVER: "smtp://127.0.0.1:9", REDIS_URL: "" },
    });
    try {
      const perEmail = [];
      for (let i = 0; i <= SIGNIN_LIMITS.perEmail.limit; i++)
        perEmail.push(await requestSignIn(server, "Same@Example.com"));
      expect(perEmail.slice(0, -1).map((attempt) => attempt.status)).toEqual(
        Array(SIGNIN_LIMITS.perEmail.limit).fill(200),
      );
      const refused = perEmail.at(-1)!;
      expect(refused.status).toBe(429);
      expect(new URL(refused.url).searchParams.get("error")).toBe("RateLimited");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(refused.headers.get("ratelimit")).toMatch(/^"signin-email";r=0;t=\d+$/);
      // Neither case, spaces nor another path to the same action make it another request.
      expect((await requestSignIn(server, " same@example.com")).status).toBe(429);
      expect((await requestSignIn(server, "same@example.com", "signin/email/again")).status).toBe(429);

      // The same IP has made 8 requests so far; different addresses up to the IP limit, then refused.
      const statuses = [];
      for (let i = 8; i <= SIGNIN_LIMITS.perIp.limit; i++) {
        statuses.push((await requestSignIn(server, `someone-${i}@example.com`)).status);
      }
      expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
      expect(statuses.at(-1)).toBe(429);
    } finally {
      await server.stop();
    }
  });
});

describe("after sign-in", () => {
  it("a signed-in buyer is sent back to a page of this site only, whatever the callbackUrl", async () => {
    const { id } = await buyer("return-to");
    const sessionToken = randomBytes(32).toString("hex");
    await db().session.create({ data: { sessionToken, userId: id, expires: new Date(Date.now() + 3_600_000) } });
    const server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
    try {
      const attempts = [
        "/..//evil.example/x",
        "/.//evil.example",
        "/%2e%2e//evil.example",
        "/.%2E//evil.example/x?y=1",
        "//evil.example",
        "/\\evil.example",
        "https://evil.example/",
        "/keys",
      ];
      for (const callbackUrl of attempts) {
        const response = await fetch(`${server.url}/signin?${new URLSearchParams({ callbackUrl })}`, {
          headers: { Cookie: `next-auth.session-token=${sessionToken}` },
          redirect: "manual",
        });
        expect(response.status, callbackUrl).toBe(307);
        const target = new URL(response.headers.get("location")!, server.url);
        expect(target.origin, callbackUrl).toBe(server.url);
        expect(target.pathname, callbackUrl).toBe(callbackUrl === "/keys" ? "/keys" : "/orders");
      }
    } finally {
      await server.stop();
    }
  });
});

describe("security headers", () => {
  it("are on pages, the API and share links", async () => {
    const server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
    try {
      const page = await fetch(`${server.url}/signin`);
      const csp = page.headers.get("content-security-policy") ?? "";
      expect(csp).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
      expect(csp).toContain("frame-ancestors 'none'");
      const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
      expect(await page.text()).toContain(`nonce="${nonce}"`);
      const again = await fetch(`${server.url}/signin`);
      expect(again.headers.get("content-security-policy")).not.toBe(csp);

      for (const path of ["/signin", "/api/v1/orders", "/api/health"]) {
        const response = await fetch(`${server.url}${path}`);
        expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
        expect(response.headers.get("referrer-policy"), path).toBe("strict-origin-when-cross-origin");
        expect(response.headers.get("x-frame-options"), path).toBe("DENY");
      }
      expect((await fetch(`${server.url}/api/v1/orders`)).headers.get("content-security-policy")).toBe(
        "default-src 'none'; frame-ancestors 'none'",
      );
      const share = await fetch(`${server.url}/share/dsl_unknown`);
      expect(share.headers.get("referrer-policy")).toBe("no-referrer");
      expect(share.headers.get("x-robots-tag")).toBe("noindex, nofollow");
    } finally {
      await server.stop();
    }
  });
});
