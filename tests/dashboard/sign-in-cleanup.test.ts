import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startServer } from "../helpers/server";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("dashboard_signin_cleanup");
});
afterAll(async () => {
  await env?.cleanup();
});

it("the server deletes expired sign-in links and sessions, and keeps the live ones", async () => {
  const { id, email } = await buyer("cleanup");
  const at = (minutes: number) => new Date(Date.now() + minutes * 60_000);
  const token = () => randomBytes(32).toString("hex");
  await db().session.createMany({
    data: [
      { sessionToken: "expired-session", userId: id, expires: at(-1) },
      { sessionToken: "live-session", userId: id, expires: at(60) },
    ],
  });
  await db().verificationToken.createMany({
    data: [
      { identifier: email, token: token(), expires: at(-1) },
      { identifier: email, token: "live-link", expires: at(10) },
    ],
  });

  const server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
  try {
    // Any sign-in traffic starts the first sweep.
    expect((await fetch(`${server.url}/api/auth/csrf`)).status).toBe(200);
    const remaining = async () => ({
      sessions: (await db().session.findMany({ select: { sessionToken: true } })).map((row) => row.sessionToken),
      links: (await db().verificationToken.findMany({ select: { token: true } })).map((row) => row.token),
    });
    await expect.poll(remaining, { timeout: 15_000 }).toEqual({ sessions: ["live-session"], links: ["live-link"] });
  } finally {
    await server.stop();
  }
});
