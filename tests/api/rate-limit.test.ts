import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { needingRedis, startOfAFixedWindow } from "../helpers/rate-limit";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("api_ratelimit");
});
afterAll(async () => {
  await env?.cleanup();
});

/** An account with two dataset keys, and a second account to show it is unaffected. */
async function accounts() {
  const busy = await buyer("busy");
  const other = await buyer("other");
  return {
    busyKeys: [(await apiKey(busy.id)).secret, (await apiKey(busy.id)).secret],
    otherKey: (await apiKey(other.id)).secret,
  };
}

/** The limit is per account, not per endpoint: requests alternate between two of them. */
const PATHS = ["/api/v1/orders?limit=1", "/api/v1/orders/ord_00000000000000000000000000000000"];

/** 61 requests alternating over keys, endpoints and servers: the 61st, and only it, is refused. */
async function expectExactlyOne429(servers: TestServer[], keys: string[]) {
  await startOfAFixedWindow();
  const statuses: number[] = [];
  let refused: Response | undefined;
  for (let i = 0; i < 61; i++) {
    const response = await fetch(`${servers[i % servers.length]!.url}${PATHS[i % PATHS.length]}`, {
      headers: { Authorization: `Bearer ${keys[i % keys.length]}` },
    });
    statuses.push(response.status);
    if (response.status === 429) refused = response;
    else await response.arrayBuffer();
  }
  // Answered (a list, or a 404 for the unknown order), not refused.
  expect(
    statuses.filter((status) => status === 200 || status === 404),
    `statuses: ${statuses}`,
  ).toHaveLength(60);
  expect(statuses.filter((status) => status === 429)).toHaveLength(1);
  expect(statuses[60]).toBe(429);
  await expectProblem(refused!, 429, "rate_limited");
  expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(refused!.headers.get("ratelimit")).toMatch(/^"datasets";r=0;t=\d+$/);
}

async function expectUnaffected(server: TestServer, key: string) {
  const response = await fetch(`${server.url}/api/v1/orders`, { headers: { Authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get("ratelimit")).toMatch(/^"datasets";r=59;t=\d+$/);
}

describe("the dataset rate limit: 60 per minute per account", () => {
  it("is shared by the account's keys, in-process on one server", async () => {
    const server = await startServer({
      databaseUrl: env.database.url,
      storageDir: env.storageDir,
      env: { REDIS_URL: "" },
    });
    try {
      const { busyKeys, otherKey } = await accounts();
      await expectExactlyOne429([server], busyKeys);
      await expectUnaffected(server, otherKey);
    } finally {
      await server.stop();
    }
  });

  // Needs a real Redis: runs whenever REDIS_URL is set (CI sets it), and then fails if Redis is down.
  it.runIf(Boolean(process.env.REDIS_URL))(
    needingRedis("is shared across two server processes through Redis"),
    async () => {
      const redisEnv = { REDIS_URL: process.env.REDIS_URL! };
      const servers = await Promise.all(
        [1, 2].map(() => startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: redisEnv })),
      );
      try {
        const { busyKeys, otherKey } = await accounts();
        await expectExactlyOne429(servers, busyKeys);
        await expectUnaffected(servers[1]!, otherKey);
      } finally {
        await Promise.all(servers.map((server) => server.stop()));
      }
    },
  );
});
