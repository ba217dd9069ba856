import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { closeJobQueue } from "../../lib/queue";
import { replaceApiKey, revokeApiKey } from "../../lib/keys";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, type TestServer } from "../helpers/server";

/**
 * A list, read, download or preview request is one statement: the key is checked in the same
 * statement as the read (lib/http/keyed-request.ts KeyInFirstRead), once an instance has seen the key. These
 * tests hold that to the contract on two instances of the production server: a key revoked,
 * expired or retired is refused at its very next request on each, whichever endpoint, and a
 * refused key's own error still comes before any other (a bad query, the rate limit).
 */

let env: TestEnvironment;
let instances: TestServer[];
let paths: Record<string, string>;

beforeAll(async () => {
  env = await createTestEnvironment("key_next_request");
  instances = await Promise.all(
    [1, 2].map(() =>
      startServer({ databaseUrl: env.database.url, storageDir: env.storageDir, env: { REDIS_URL: "" } }),
    ),
  );
}, 180_000);
afterAll(async () => {
  await Promise.all((instances ?? []).map((instance) => instance.stop()));
  await closeJobQueue();
  await env?.cleanup();
});

/** An account with a delivered order of one CSV file, and the four endpoints that read it. */
async function account(label: string) {
  const owner = await buyer(label);
  const delivered = await order(owner.id, { files: { "data.csv": Buffer.from("a,b\n1,2\n") } });
  const file = delivered.files[0]!.id;
  paths = {
    list: "/api/v1/orders?limit=5",
    read: `/api/v1/orders/${delivered.id}`,
    download: `/api/v1/orders/${delivered.id}/files/${file}`,
    preview: `/api/v1/orders/${delivered.id}/files/${file}/preview`,
  };
  return owner;
}

const get = (instance: TestServer, path: string, secret: string) =>
  fetch(`${instance.url}${path}`, { headers: { Authorization: `Bearer ${secret}` }, redirect: "manual" });

/** Every endpoint on every instance, twice: each instance now knows the key (the one-statement path). */
async function useEverywhere(secret: string) {
  for (let round = 0; round < 2; round++) {
    for (const instance of instances) {
      for (const [endpoint, path] of Object.entries(paths)) {
        const response = await get(instance, path, secret);
        await response.arrayBuffer();
        // The preview may not be ready yet (the file is profiled by the worker); anything but a 401.
        expect([200, 302, 404], `${endpoint} on ${instance.url}`).toContain(response.status);
      }
    }
  }
}

/** The very next request of the key, on each instance and each endpoint, is the key's refusal. */
async function expectRefusedEverywhere(secret: string, code: string) {
  for (const instance of instances) {
    for (const path of Object.values(paths)) {
      const response = await get(instance, path, secret);
      const problem = await expectProblem(response, 401, code);
      // Refused as the key: the failed-authentication limit's headers, not the account's; none of its data.
      expect(response.headers.get("ratelimit")).toMatch(/^"auth-failures";/);
      expect(JSON.stringify(problem)).not.toMatch(/ord_|fil_|data\.csv/);
    }
  }
}

describe("a key's end applies at its very next request, on every instance", () => {
  it("revoked", async () => {
    const owner = await account("next-revoked");
    const key = await apiKey(owner.id);
    await useEverywhere(key.secret);
    await revokeApiKey(key.id);
    await expectRefusedEverywhere(key.secret, "revoked_api_key");
  });

  it("expired", async () => {
    const owner = await account("next-expired");
    const key = await apiKey(owner.id);
    await useEverywhere(key.secret);
    await db().apiKey.update({ where: { id: key.id }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    await expectRefusedEverywhere(key.secret, "expired_api_key");
  });

  it("retired: replaced with an overlap that has ended", async () => {
    const owner = await account("next-retired");
    const key = await apiKey(owner.id);
    await useEverywhere(key.secret);
    const replacement = await replaceApiKey({ buyerId: owner.id, keyId: key.id, expiresInDays: 30, overlap: "1h" });
    // Still within the overlap: the old key works on both instances.
    for (const instance of instances) expect((await get(instance, paths.list!, key.secret)).status).toBe(200);
    await db().apiKey.update({ where: { id: key.id }, data: { retiresAt: new Date(Date.now() - 1_000) } });
    await expectRefusedEverywhere(key.secret, "revoked_api_key");
    for (const instance of instances) expect((await get(instance, paths.list!, replacement.secret)).status).toBe(200);
  });

  it("the key's refusal comes before a bad query and before the account's rate limit", async () => {
    const owner = await account("next-precedence");
    const key = await apiKey(owner.id);
    const [first, second] = instances as [TestServer, TestServer];
    expect((await get(first, paths.list!, key.secret)).status).toBe(200);
    // The account's 60 for this minute on the second instance (each has its own count without
    // Redis; the window may turn: count until refused, at most 120).
    let answered = 0;
    for (; answered < 120; answered++) {
      const response = await get(second, paths.list!, key.secret);
      await response.arrayBuffer();
      if (response.status === 429) break;
    }
    expect(answered).toBeLessThan(120);
    await revokeApiKey(key.id);
    await expectProblem(await get(first, "/api/v1/orders?limit=0", key.secret), 401, "revoked_api_key");
    const refused = await get(second, paths.list!, key.secret);
    await expectProblem(refused, 401, "revoked_api_key");
    expect(refused.headers.get("retry-after")).toBeNull();
  });
});
