import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH_FAILURE_LIMIT } from "../../lib/contract";
import { generateSecret } from "../../lib/keys/secret";
import { createTestEnvironment, lockTable } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startOfAFixedWindow } from "../helpers/rate-limit";
import { startServer, type TestServer } from "../helpers/server";

/**
 * Failed authentications are limited per client address, over HTTP against the production
 * server. Clients are told apart by the loopback address they connect from (127.0.0.2, ...),
 * which is what the server sees without TRUST_PROXY; the X-Forwarded-For they send is ignored.
 */

let env: TestEnvironment;
let server: TestServer;
let validKey: string;
const { limit, windowSeconds } = AUTH_FAILURE_LIMIT;

beforeAll(async () => {
  env = await createTestEnvironment("api_auth_failures");
  validKey = (await apiKey((await buyer("auth-failures")).id)).secret;
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

/** GET /api/v1/orders from a loopback address of the client's own. */
function ordersFrom(localAddress: string, headers: Record<string, string>): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${server.url}/api/v1/orders`, { localAddress, headers, agent: false }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(answer.headers))
          if (typeof value === "string") responseHeaders.set(name, value);
        resolve(new Response(Buffer.concat(chunks), { status: answer.statusCode, headers: responseHeaders }));
      });
    });
    request.on("error", reject);
  });
}

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

describe(`failed authentications: ${limit} a minute per client address`, () => {
  it("answers the failures, then refuses the address whatever it sends, without a database lookup", async () => {
    await startOfAFixedWindow(20_000, windowSeconds);
    for (let i = 1; i <= limit; i++) {
      // Unknown keys that pass the checksum (each costs a lookup); a forged X-Forwarded-For changes nothing.
      const response = await ordersFrom("127.0.0.2", { ...bearer(generateSecret()), "X-Forwarded-For": `10.9.${i}.1` });
      await expectProblem(response, 401, "invalid_api_key");
      expect(response.headers.get("ratelimit")).toMatch(new RegExp(`^"auth-failures";r=${limit - i};t=\\d+$`));
    }
    const refused = await ordersFrom("127.0.0.2", bearer(generateSecret()));
    await expectProblem(refused, 429, "rate_limited", /Too many failed authentications from your address/);
    expect(refused.headers.get("ratelimit-policy")).toBe(`"auth-failures";q=${limit};w=${windowSeconds}`);
    expect(refused.headers.get("ratelimit")).toMatch(/^"auth-failures";r=0;t=\d+$/);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(windowSeconds);

    // The api_keys table is locked: any key lookup would wait (and end in a 503), yet the noted
    // address is answered 429 at once, even with a valid key.
    const migration = await lockTable(env.database.url, "api_keys");
    try {
      await expectProblem(await ordersFrom("127.0.0.2", bearer(validKey)), 429, "rate_limited");
      await expectProblem(await ordersFrom("127.0.0.2", {}), 429, "rate_limited");
    } finally {
      await migration.release();
    }
  });

  it("leaves other addresses, and successful requests, alone", async () => {
    const ok = await ordersFrom("127.0.0.3", bearer(validKey));
    expect(ok.status).toBe(200);
    expect(ok.headers.get("ratelimit")).toMatch(/^"datasets";/);
    const failed = await ordersFrom("127.0.0.3", {});
    await expectProblem(failed, 401, "missing_api_key");
    expect(failed.headers.get("ratelimit")).toMatch(new RegExp(`^"auth-failures";r=${limit - 1};t=\\d+$`));
  });
});
