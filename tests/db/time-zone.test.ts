import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { revokeApiKey } from "../../lib/keys";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;

/** A database whose sessions default to a zone far from UTC, as on a developer's machine. */
beforeAll(async () => {
  env = await createTestEnvironment("time_zone");
  const client = new pg.Client({ connectionString: env.database.url });
  await client.connect();
  await client.query(`ALTER DATABASE "${env.database.name}" SET timezone TO 'America/New_York'`);
  await client.end();
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
});
afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const list = (key: string) => fetch(`${server.url}/api/v1/orders`, { headers: { Authorization: `Bearer ${key}` } });

describe("a database whose default time zone is not UTC", () => {
  it("still refuses a key on the very next request after its revocation", async () => {
    const account = await buyer("tz-revoke");
    const key = await apiKey(account.id);
    expect((await list(key.secret)).status).toBe(200);
    await revokeApiKey(key.id);
    const refused = await list(key.secret);
    expect(refused.status).toBe(401);
    expect((await refused.json()).code).toBe("revoked_api_key");
  });

  it("refuses a key whose revocation time reads as the future (a writer in another zone or with a skewed clock)", async () => {
    const account = await buyer("tz-revoked-ahead");
    const key = await apiKey(account.id);
    expect((await list(key.secret)).status).toBe(200);
    // What a session in UTC-5 writing a zoneless local time would leave behind: five hours ahead.
    await db().$executeRaw`UPDATE api_keys SET revoked_at = now() + interval '5 hours' WHERE id = ${key.id}`;
    const refused = await list(key.secret);
    expect(refused.status).toBe(401);
    expect((await refused.json()).code).toBe("revoked_api_key");
  });

  it("refuses a key a minute past its expiry, and keeps one a minute before it", async () => {
    const account = await buyer("tz-expiry");
    const thirtyDays = 30 * 86_400_000;
    const expired = await apiKey(account.id, { createdAt: new Date(Date.now() - thirtyDays - 60_000) });
    const current = await apiKey(account.id, { createdAt: new Date(Date.now() - thirtyDays + 60_000) });
    const refused = await list(expired.secret);
    expect(refused.status).toBe(401);
    expect((await refused.json()).code).toBe("expired_api_key");
    expect((await list(current.secret)).status).toBe(200);
  });
});
