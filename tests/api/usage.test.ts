import { afterAll, beforeAll, expect, it } from "vitest";
import { usageByKey } from "../../lib/keys/usage";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startOfAFixedWindow } from "../helpers/rate-limit";
import { startServer } from "../helpers/server";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("api_usage");
});
afterAll(async () => {
  await env?.cleanup();
});

const UNKNOWN_ORDER = "/api/v1/orders/ord_00000000000000000000000000000000";

async function send(url: string, path: string, secret: string, times: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++) {
    const response = await fetch(`${url}${path}`, { headers: { Authorization: `Bearer ${secret}` } });
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return statuses;
}

/** A key's counts of the last 30 days by outcome, summed (a run may straddle midnight UTC). */
function totals(usage: Awaited<ReturnType<typeof usageByKey>>, keyId: string) {
  const sums = { "2xx": 0, "4xx": 0, "429": 0, "5xx": 0 };
  for (const day of usage.get(keyId)?.days ?? []) {
    for (const outcome of Object.keys(sums) as (keyof typeof sums)[]) sums[outcome] += day[outcome];
  }
  return sums;
}

it("counts every answer per key and outcome (2xx, 4xx, 429), and nothing for an unknown key", async () => {
  const server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { USAGE_FLUSH_INTERVAL_MS: "200" },
  });
  try {
    const account = await buyer("usage");
    const delivered = await order(account.id);
    const [first, second] = [await apiKey(account.id), await apiKey(account.id)];
    // The 61st and 62nd of the account within one window of the limit are refused.
    await startOfAFixedWindow();
    expect(await send(server.url, "/api/v1/orders", first.secret, 3)).toEqual([200, 200, 200]);
    expect(await send(server.url, `/api/v1/orders/${delivered.id}`, second.secret, 2)).toEqual([200, 200]);
    expect(new Set(await send(server.url, UNKNOWN_ORDER, first.secret, 55))).toEqual(new Set([404]));
    expect(await send(server.url, UNKNOWN_ORDER, first.secret, 2)).toEqual([429, 429]);
    await send(server.url, "/api/v1/orders", "dak_unknown", 2);

    // Written within moments (every 200 ms here); polled, not slept on.
    let usage = await usageByKey(account.id);
    for (let waited = 0; waited < 10_000 && (usage.get(first.id)?.last24Hours ?? 0) < 60; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      usage = await usageByKey(account.id);
    }
    expect(totals(usage, first.id)).toEqual({ "2xx": 3, "4xx": 55, "429": 2, "5xx": 0 });
    expect(usage.get(first.id)?.last24Hours).toBe(60);
    expect(totals(usage, second.id)).toEqual({ "2xx": 2, "4xx": 0, "429": 0, "5xx": 0 });
    expect(usage.size).toBe(2);
  } finally {
    await server.stop();
  }
});

it("writes the counts still in the process when the server stops", async () => {
  const server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { USAGE_FLUSH_INTERVAL_MS: "600000" },
  });
  const account = await buyer("usage-stop");
  const key = await apiKey(account.id);
  await send(server.url, "/api/v1/orders", key.secret, 4);
  await server.stop();
  const usage = await usageByKey(account.id);
  expect(totals(usage, key.id)["2xx"]).toBe(4);
});
