import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIGNIN_LIMITS } from "../../lib/auth/signin-limits";
import { db } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { startOfAFixedWindow } from "../helpers/rate-limit";
import { requestSignIn } from "../helpers/sign-in";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("dashboard_signin");
});
afterAll(async () => {
  await env?.cleanup();
});

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
      expect(refused.error).toBe("EmailNotConfigured");
      const page = await (await fetch(`${server.url}/signin`)).text();
      expect(page).toContain("E-mail sign-in is not configured on this server: set EMAIL_SERVER");
      expect((await fetch(`${server.url}/dev/mailbox`)).status).toBe(404);
      expect(server.output()).toContain("E-mail sign-in is not configured");
    } finally {
      await server.stop();
    }
  });
});

describe("sign-in limits", () => {
  let server: TestServer;
  beforeAll(async () => {
    // Unknown addresses: the limits count them as they count buyers, and no e-mail is sent, so no SMTP server is
    // needed. In-process counts, so every run starts from zero (a shared Redis would keep them for 15 minutes).
    // Behind a "proxy" (TRUST_PROXY), so that each request can come from the client address it names.
    server = await startServer({
      databaseUrl: env.database.url,
      storageDir: env.storageDir,
      withAppUrl: true,
      env: { EMAIL_SERVER: "smtp://127.0.0.1:9", REDIS_URL: "", TRUST_PROXY: "true" },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("a sign-in link with a malformed address or token (NUL, control characters) gets its page, never a 500", async () => {
    for (const [email, token] of [
      ["a\u0000b@example.com", "token"],
      ["a@example.com", "\u0000"],
      ["a\u007f@example.com", "x".repeat(5000)],
    ] as [string, string][]) {
      const page = await fetch(`${server.url}/signin/confirm?${new URLSearchParams({ email, token })}`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("This sign-in link no longer works");
      const callback = await fetch(`${server.url}/api/auth/callback/email?${new URLSearchParams({ email, token })}`, {
        redirect: "manual",
      });
      expect(callback.status).toBeLessThan(500);
    }
  });

  it("count only requests that would send an e-mail: none without a valid CSRF token or address", async () => {
    await startOfAFixedWindow(20_000, SIGNIN_LIMITS.perEmailAndIp.windowSeconds);
    for (let i = 0; i < 2 * SIGNIN_LIMITS.perEmailAndIp.limit; i++) {
      const forged = await requestSignIn(server, "victim@corp.example", { ip: "198.51.100.1", csrf: false });
      expect(forged.url.searchParams.get("csrf")).toBe("true");
      const malformed = await requestSignIn(server, "victim@corp.example,", { ip: "198.51.100.1" });
      expect(malformed.error).toBe("EmailSignin");
    }
    const victim = await requestSignIn(server, "Victim@Corp.example", { ip: "198.51.100.1" });
    expect(victim.error).toBeNull();
    expect(victim.url.pathname).toBe("/api/auth/verify-request");
  });

  it("an attacker on another network uses up only their own share of an address", async () => {
    const attempts = [];
    await startOfAFixedWindow(20_000, SIGNIN_LIMITS.perEmailAndIp.windowSeconds);
    for (let i = 0; i <= SIGNIN_LIMITS.perEmailAndIp.limit; i++) {
      // Each attempt from another address of the same IPv6 /64: one network.
      attempts.push(await requestSignIn(server, "target@corp.example", { ip: `2001:db8:1:2::${i + 1}` }));
    }
    expect(attempts.slice(0, -1).map((attempt) => attempt.error)).toEqual(
      Array(SIGNIN_LIMITS.perEmailAndIp.limit).fill(null),
    );
    const refused = attempts.at(-1)!;
    expect(refused.error).toBe("RateLimited");
    expect(refused.url.pathname).toBe("/signin");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("ratelimit")).toMatch(/^"signin-email-ip";r=0;t=\d+$/);
    // Neither case, spaces nor another path to the same action make it another request.
    expect((await requestSignIn(server, " TARGET@corp.example", { ip: "2001:db8:1:2::99" })).error).toBe("RateLimited");
    expect(
      (await requestSignIn(server, "target@corp.example", { ip: "2001:db8:1:2::1", action: "signin/email/again" }))
        .error,
    ).toBe("RateLimited");

    // The buyer, on their own network, still gets their e-mail.
    expect((await requestSignIn(server, "target@corp.example", { ip: "203.0.113.7" })).error).toBeNull();
  });

  it("cap what one inbox receives, however many networks ask", async () => {
    const errors = [];
    await startOfAFixedWindow(20_000, SIGNIN_LIMITS.perEmail.windowSeconds);
    for (let i = 1; i <= SIGNIN_LIMITS.perEmail.limit + 3; i++) {
      const attempt = await requestSignIn(server, "flooded@corp.example", { ip: `192.0.2.${i}` });
      errors.push(attempt.error);
      if (attempt.error) expect(attempt.headers.get("ratelimit")).toMatch(/^"signin-email";r=0;t=\d+$/);
    }
    expect(errors.filter((error) => error === null)).toHaveLength(SIGNIN_LIMITS.perEmail.limit);
    expect(errors.slice(SIGNIN_LIMITS.perEmail.limit)).toEqual(["RateLimited", "RateLimited", "RateLimited"]);
  });

  it("limit one client network across addresses", async () => {
    const errors = [];
    await startOfAFixedWindow(20_000, SIGNIN_LIMITS.perIp.windowSeconds);
    for (let i = 0; i <= SIGNIN_LIMITS.perIp.limit; i++) {
      errors.push((await requestSignIn(server, `someone-${i}@example.com`, { ip: "::ffff:198.51.100.200" })).error);
    }
    expect(errors.slice(0, -1).every((error) => error === null)).toBe(true);
    expect(errors.at(-1)).toBe("RateLimited");
    // The same IPv4 address, written plainly, is the same client.
    expect((await requestSignIn(server, "someone-else@example.com", { ip: "198.51.100.200" })).error).toBe(
      "RateLimited",
    );
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
