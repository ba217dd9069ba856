import { createCipheriv, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  generateAccountSASQueryParameters,
  SASProtocol,
  StorageSharedKeyCredential,
} from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { MAX_DESTINATIONS_PER_ACCOUNT } from "../../lib/exports/destinations";
import { secretsKeyRing } from "../../lib/exports/secrets";
import { createTestEnvironment, lockTable } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { callServerAction, serverActionId, sessionCookie } from "../helpers/server-action";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { AZURITE_ACCOUNT, AZURITE_KEY, startTestAzurite, type TestAzurite } from "./stores";

/**
 * A destination's stored secret goes only where it was given for (issue #37), through the
 * dashboard's server actions on the production server: a new account URL without the secret is
 * refused and nothing reaches the new host; a sealed secret copied into another row does not open
 * there; a value sealed before the binding still works. And the 10-destination limit holds when
 * creations come at once.
 */

const ACTIONS_FILE = "app/(dashboard)/exports/actions.ts";

let env: TestEnvironment;
let server: TestServer;
let azurite: TestAzurite;
let harvester: { accountUrl: string; requests: string[]; close: () => Promise<void> };
let actions: Record<"create" | "update" | "test", string>;
let sasToken: string;
const secretsKey = randomBytes(32).toString("base64");

/** A store of someone else's on loopback: records every request (a SAS token travels in the URL), answers 403. */
async function startHarvester() {
  const requests: string[] = [];
  const listener = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.writeHead(403).end();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const { port } = listener.address() as AddressInfo;
  return {
    accountUrl: `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`,
    requests,
    close: () => new Promise<void>((resolve) => listener.close(() => resolve())),
  };
}

beforeAll(async () => {
  env = await createTestEnvironment("exports_secrets");
  Object.assign(process.env, { AUTH_SECRET: TEST_AUTH_SECRET, EXPORT_SECRETS_KEY: secretsKey });
  azurite = await startTestAzurite();
  await azurite.createContainer("lake");
  harvester = await startHarvester();
  sasToken = generateAccountSASQueryParameters(
    {
      expiresOn: new Date(Date.now() + 3_600_000),
      permissions: AccountSASPermissions.parse("rwdlac"),
      resourceTypes: AccountSASResourceTypes.parse("sco").toString(),
      services: AccountSASServices.parse("b").toString(),
      protocol: SASProtocol.HttpsAndHttp,
    },
    new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY),
  ).toString();
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      JOBS_WORKER: "off",
      EXPORT_SECRETS_KEY: secretsKey,
      EXPORT_ALLOW_PRIVATE: "true",
      // Room for every concurrent creation of the limit test to wait in PostgreSQL, not in the pool.
      DATABASE_POOL_SIZE: "40",
      DATABASE_STATEMENT_TIMEOUT_MS: "60000",
    },
  });
  actions = {
    create: await serverActionId(ACTIONS_FILE, "createDestinationAction"),
    update: await serverActionId(ACTIONS_FILE, "updateDestinationAction"),
    test: await serverActionId(ACTIONS_FILE, "testDestinationAction"),
  };
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await Promise.allSettled([azurite?.stop(), harvester?.close()]);
  await env?.cleanup();
});

type ActionAnswer = { ok: boolean; error?: string; id?: string; passed?: boolean; message?: string };

const act = (action: keyof typeof actions, cookie: string, input: unknown) =>
  callServerAction<ActionAnswer>(server, { page: "/exports", actionId: actions[action], cookie, input });

const azureInput = (fields: Record<string, unknown>) => ({
  name: "lake",
  type: "azure",
  fields: { container: "lake", prefix: "secrets", ...fields },
  orders: "all",
  format: "original",
});

describe("a destination's stored secret", { timeout: 120_000 }, () => {
  it("is not kept when the account URL changes: the change is refused, nothing reaches the new host", async () => {
    const account = await buyer("secrets-moved-url");
    const cookie = await sessionCookie(account.id);
    const created = await act("create", cookie, azureInput({ account_url: azurite.accountUrl, sas_token: sasToken }));
    expect(created).toMatchObject({ ok: true });
    const destinationId = created.id!;

    const moved = await act("update", cookie, {
      destinationId,
      ...azureInput({ account_url: harvester.accountUrl, sas_token: "" }),
    });
    expect(moved).toEqual({
      ok: false,
      error: "The account URL changed: enter the SAS token or account key again, as it would be sent there.",
      field: "secret",
    });
    // Nothing was lost: the destination still writes where it did, with its secret.
    expect(await act("test", cookie, { destinationId })).toMatchObject({ ok: true, passed: true });
    // Other settings still change with the stored secret kept.
    const renamed = await act("update", cookie, {
      destinationId,
      ...azureInput({ account_url: azurite.accountUrl, sas_token: "", prefix: "renamed" }),
    });
    expect(renamed).toEqual({ ok: true });
    expect(await act("test", cookie, { destinationId })).toMatchObject({ ok: true, passed: true });
    expect(harvester.requests).toEqual([]);
  });

  it("copied into another destination's row does not open there, and is sent nowhere", async () => {
    const account = await buyer("secrets-copied-row");
    const cookie = await sessionCookie(account.id);
    const genuine = await act("create", cookie, azureInput({ account_url: azurite.accountUrl, sas_token: sasToken }));
    const decoy = await act("create", cookie, {
      ...azureInput({ account_url: harvester.accountUrl, sas_token: "sv=2020-08-04&sig=decoy" }),
      name: "decoy",
    });
    const { secretsSealed } = await db().exportDestination.findUniqueOrThrow({ where: { id: genuine.id! } });
    await db().exportDestination.update({ where: { id: decoy.id! }, data: { secretsSealed } });

    const tested = await act("test", cookie, { destinationId: decoy.id! });
    expect(tested).toEqual({
      ok: false,
      error:
        "The destination's secrets do not open for this destination and address (they were sealed for another one, or changed): enter the secrets again.",
    });
    expect(harvester.requests).toEqual([]);
    // Entering the secret again is the way out.
    const repaired = await act("update", cookie, {
      destinationId: decoy.id!,
      ...azureInput({ account_url: harvester.accountUrl, sas_token: "sv=2020-08-04&sig=decoy2" }),
      name: "decoy",
    });
    expect(repaired).toEqual({ ok: true });
  });

  it("sealed before secrets were bound to their destination (v1) still opens, and is sealed again bound", async () => {
    const account = await buyer("secrets-legacy");
    const cookie = await sessionCookie(account.id);
    const created = await act("create", cookie, azureInput({ account_url: azurite.accountUrl, sas_token: sasToken }));
    // As the code before #37 sealed: no additional data.
    const [key] = secretsKeyRing();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key!.key, iv);
    const data = Buffer.concat([cipher.update(JSON.stringify({ sas_token: sasToken }), "utf8"), cipher.final()]);
    const legacy = ["v1", key!.id, ...[iv, cipher.getAuthTag(), data].map((part) => part.toString("base64url"))];
    await db().exportDestination.update({ where: { id: created.id! }, data: { secretsSealed: legacy.join(".") } });

    expect(await act("test", cookie, { destinationId: created.id! })).toMatchObject({ ok: true, passed: true });
    const row = await db().exportDestination.findUniqueOrThrow({ where: { id: created.id! } });
    expect(row.secretsSealed.startsWith(`v2.${key!.id}.`)).toBe(true);
  });
});

describe("the limit of destinations per account", { timeout: 180_000 }, () => {
  it("holds when creations come at once: exactly 10 are made, the rest refused", async () => {
    const account = await buyer("secrets-limit");
    const cookie = await sessionCookie(account.id);
    const attempts = MAX_DESTINATIONS_PER_ACCOUNT + 6;
    // Every creation is made to wait at the same point (the table locked), then all go at once.
    const lock = await lockTable(env.database.url, "export_destinations");
    const waitingOnLocks = async () => {
      const [row] = await db().$queryRaw<{ waiting: bigint }[]>`
        SELECT count(*) AS waiting FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      return Number(row!.waiting);
    };
    const answers = Array.from({ length: attempts }, (_, index) =>
      act("create", cookie, {
        name: `lake ${index}`,
        type: "s3",
        fields: { bucket: "lake", region: "us-east-1", access_key_id: "AKIA0000", secret_access_key: "secret" },
        orders: "all",
        format: "original",
      }),
    );
    try {
      await waitFor(async () => (await waitingOnLocks()) >= attempts, 120_000, `${attempts} creations to wait`);
    } finally {
      await lock.release();
    }
    const results = await Promise.all(answers);
    expect(results.filter((result) => result.ok)).toHaveLength(MAX_DESTINATIONS_PER_ACCOUNT);
    expect(results.filter((result) => !result.ok).map((result) => result.error)).toEqual(
      Array(attempts - MAX_DESTINATIONS_PER_ACCOUNT).fill("An account has at most 10 export destinations."),
    );
    expect(await db().exportDestination.count({ where: { buyerId: account.id } })).toBe(MAX_DESTINATIONS_PER_ACCOUNT);
  });
});
