import { afterAll, beforeAll, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { authenticateApiKey } from "../../lib/keys/verify";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";

let env: TestEnvironment;

beforeAll(async () => {
  env = await createTestEnvironment("last-used");
});
afterAll(async () => {
  await env?.cleanup();
});

const lastUsed = async (id: string) =>
  (await db().apiKey.findUniqueOrThrow({ where: { id }, select: { lastUsedAt: true } })).lastUsedAt;
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_500));

it("records when each key was last used, in one batch for many keys, at most once a minute", async () => {
  const account = await buyer("last-used");
  const keys = await Promise.all(Array.from({ length: 25 }, () => apiKey(account.id)));
  const first = new Date();
  for (const key of keys) await authenticateApiKey(`Bearer ${key.secret}`, first);
  await settle();
  for (const key of keys) expect((await lastUsed(key.id))?.getTime()).toBe(first.getTime());

  // Within the minute: no new write. A minute later: written again.
  await authenticateApiKey(`Bearer ${keys[0]!.secret}`, new Date(first.getTime() + 30_000));
  await settle();
  expect((await lastUsed(keys[0]!.id))?.getTime()).toBe(first.getTime());
  const later = new Date(first.getTime() + 61_000);
  await authenticateApiKey(`Bearer ${keys[0]!.secret}`, later);
  await settle();
  expect((await lastUsed(keys[0]!.id))?.getTime()).toBe(later.getTime());
});
