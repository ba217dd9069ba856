import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { db } from "../../lib/db/client";
import { handleRenditionJob } from "../../lib/datasets/jobs";
import { exportRun, exportRunPage } from "../../lib/exports/api";
import {
  createDestination,
  openDestination,
  testOwnDestination,
  updateDestination,
} from "../../lib/exports/destinations";
import { MAX_ATTEMPTS } from "../../lib/exports/outcomes";
import { exportNow } from "../../lib/exports/run-now";
import { runExport } from "../../lib/exports/runs";
import { openTarget } from "../../lib/exports/targets";
import { AzureTarget } from "../../lib/exports/targets/azure";
import { S3Target } from "../../lib/exports/targets/s3";
import { SftpTarget } from "../../lib/exports/targets/sftp";
import { closeJobQueue } from "../../lib/queue";
import { addOrderFile, createOrder, registerStoredObject, setOrderStatus } from "../../lib/operator/orders";
import { OPERATOR } from "../../lib/security/log";
import { createEndpoint } from "../../lib/webhooks/endpoints";
import { RETRY_DELAYS_MS } from "../../lib/webhooks/deliver";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { processPendingNow } from "../../lib/tables/pipeline";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { AZURITE_KEY, sha256, startTestAzurite, startTestSftp, type TestAzurite, type TestSftp } from "./stores";

/**
 * Export runs end to end against real stores on loopback (s3rver checking SigV4, Azurite, an ssh2
 * SFTP server) and the real PostgreSQL, from both storage drivers at once: one order's files are
 * stored locally (STORAGE_DIR), another's are registered from S3 (s3://...). Runs are made by the
 * trigger itself (setOrderStatus, Export now) and attempted by the same function the worker runs.
 */

const LAKE_BUCKET = "buyer-lake";
const BIG = 9 * 1024 * 1024 + 12_345; // more than one 8 MiB part or block

let env: TestEnvironment;
let s3: TestS3;
let azurite: TestAzurite;
let sftp: TestSftp;

beforeAll(async () => {
  env = await createTestEnvironment("exports");
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE_BUCKET] });
  azurite = await startTestAzurite();
  sftp = await startTestSftp();
  // This process reads S3 sources from the test store, and stores new files locally: both drivers in one run.
  Object.assign(process.env, s3.env, {
    STORAGE_DRIVER: "local",
    AUTH_SECRET: TEST_AUTH_SECRET,
    EXPORT_SECRETS_KEY: randomBytes(32).toString("base64"),
    EXPORT_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
  });
  await azurite.createContainer("lake");
  await fs.mkdir(path.join(sftp.root, "upload"));
}, 120_000);

afterAll(async () => {
  await closeJobQueue();
  await Promise.allSettled([s3?.stop(), azurite?.stop(), sftp?.stop()]);
  await env?.cleanup();
});

function destinations(label: string) {
  return {
    s3: {
      type: "s3" as const,
      fields: {
        bucket: LAKE_BUCKET,
        region: "us-east-1",
        endpoint: s3.endpoint,
        force_path_style: true,
        prefix: `${label}/`,
        access_key_id: "S3RVER",
        secret_access_key: "S3RVER",
      },
    },
    azure: {
      type: "azure" as const,
      fields: { account_url: azurite.accountUrl, container: "lake", prefix: label, account_key: AZURITE_KEY },
    },
    sftp: {
      type: "sftp" as const,
      fields: {
        host: sftp.host,
        port: sftp.port,
        username: sftp.username,
        password: sftp.password,
        directory: `/upload/${label}`,
        host_key_sha256: sftp.fingerprint(),
      },
    },
  };
}

type StoreType = "s3" | "azure" | "sftp";

/** The bytes and recorded sha256 (null where the store keeps none) at a full key of a store. */
async function objectAt(type: StoreType, key: string): Promise<{ bytes: Buffer; sha256: string | null } | null> {
  if (type === "s3") {
    const client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    });
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: LAKE_BUCKET, Key: key }));
      return { bytes: Buffer.from(await object.Body!.transformToByteArray()), sha256: object.Metadata?.sha256 ?? null };
    } catch {
      return null;
    } finally {
      client.destroy();
    }
  }
  if (type === "azure") {
    const blob = await azurite.blob("lake", key);
    return blob && { bytes: blob.bytes, sha256: blob.metadata.sha256 ?? null };
  }
  const bytes = await fs.readFile(path.join(sftp.root, key)).catch(() => null);
  return bytes && { bytes, sha256: null };
}

/** A delivered order of local files and one of files registered from S3, with the bytes each file should land with. */
async function deliveredOrders(buyerId: string, label: string) {
  const local = await createOrder({ buyerId, name: `${label} local`, status: "unfinished" });
  const localFiles: Record<string, Buffer> = {
    "products.csv": Buffer.from("id,name\n1,mug\n2,plate\n"),
    "photo.bin": randomBytes(50_000),
    "big.bin": randomBytes(BIG),
  };
  for (const [name, content] of Object.entries(localFiles)) {
    await addOrderFile({ orderId: local.id, name, source: Readable.from([content]) });
  }
  const remote = await createOrder({ buyerId, name: `${label} from S3`, status: "unfinished" });
  const remoteFiles: Record<string, Buffer> = {
    "seller.csv": Buffer.from("a,b\n1,2\n"),
    "seller-big.bin": randomBytes(BIG),
  };
  for (const [name, content] of Object.entries(remoteFiles)) {
    await s3.putObject(`${label}/${name}`, content);
    await registerStoredObject({ orderId: remote.id, location: `s3://${TEST_BUCKET}/${label}/${name}`, name });
  }
  return [
    { id: local.id, files: localFiles },
    { id: remote.id, files: remoteFiles },
  ];
}

describe("export runs to S3, Azure and SFTP from both storage drivers", () => {
  it("copy every file of a delivered order, verified, with the manifest last; Export now skips what is there", async () => {
    const account = await buyer("exports");
    const endpoint = await createEndpoint({
      buyerId: account.id,
      url: "http://127.0.0.1:9/hooks",
      events: ["export.completed", "export.failed"],
    });
    const made: Record<StoreType, string> = { s3: "", azure: "", sftp: "" };
    for (const [type, input] of Object.entries(destinations("lake")) as [
      StoreType,
      { type: StoreType; fields: Record<string, unknown> },
    ][]) {
      made[type] = (await createDestination(account.id, { name: `${type} lake`, ...input }, OPERATOR)).id;
      expect(await testOwnDestination(account.id, made[type], OPERATOR)).toMatchObject({
        ok: true,
        message: expect.stringMatching(/^Wrote, read back and deleted _dataset-access-connection-test-/),
      });
    }
    const orders = await deliveredOrders(account.id, "lake");
    // Each data file is version 1 of its own table before the order is delivered (contract Part 4).
    await processPendingNow();
    for (const order of orders) await setOrderStatus(order.id, "delivered");
    const runs = await db().exportRun.findMany({ where: { buyerId: account.id }, include: { destination: true } });
    expect(runs).toHaveLength(6); // 2 orders x 3 destinations, queued in the status change's transaction
    for (const run of runs) {
      const outcome = await runExport(run.id);
      expect(outcome, `${run.destination.type} run of ${run.orderId}`).toMatchObject({ result: "completed" });
    }
    for (const run of await db().exportRun.findMany({
      where: { buyerId: account.id },
      include: { destination: true },
    })) {
      const type = run.destination.type;
      const order = orders.find(({ id }) => id === run.orderId)!;
      expect(run).toMatchObject({
        state: "completed",
        files: Object.keys(order.files).length,
        skipped: 0,
        error: null,
      });
      const base = type === "sftp" ? `upload/lake/${order.id}` : `lake/${order.id}`;
      expect(run.manifestKey).toBe(type === "sftp" ? `/${base}/_manifest.json` : `${base}/_manifest.json`);
      for (const [name, content] of Object.entries(order.files)) {
        // The default template: {order_id}/{table}/v{version}/{file_name}, tableless files {order_id}/{file_name}.
        const key = name.endsWith(".csv") ? `${base}/${name.replace(/\.csv$/, "")}/v1/${name}` : `${base}/${name}`;
        const landed = await objectAt(type, key);
        expect(landed, `${type}: ${key}`).not.toBeNull();
        expect(sha256(landed!.bytes)).toBe(sha256(content));
        if (type !== "sftp") expect(landed!.sha256).toBe(sha256(content));
      }
      const manifest = JSON.parse((await objectAt(type, `${base}/_manifest.json`))!.bytes.toString());
      expect(manifest).toMatchObject({ run_id: run.id, order_id: order.id, destination_id: run.destinationId });
      expect(
        manifest.files.map((file: { name: string; size: number; sha256: string }) => [
          file.name,
          file.size,
          file.sha256,
        ]),
      ).toEqual(Object.entries(order.files).map(([name, content]) => [name, content.length, sha256(content)]));
    }
    // No temporary or half-written files were left beside them.
    expect((await sftp.files()).filter((file) => file.includes(".partial"))).toEqual([]);
    expect(await s3.uploadedParts(LAKE_BUCKET)).toEqual([]);

    // Export now: the same files are there with the same sha256, so nothing is copied again.
    const before = await azurite.blobNames("lake");
    for (const type of ["s3", "azure", "sftp"] as const) {
      const [manual] = await exportNow({ orderId: orders[0]!.id, destinationId: made[type], buyerId: account.id });
      expect(manual).toMatchObject({ trigger: "manual", state: "pending", destination: { id: made[type], type } });
      expect(await runExport(manual!.id)).toMatchObject({ result: "completed", files: 3, skipped: 3 });
    }
    expect(await azurite.blobNames("lake")).toEqual(before);

    // The buyer's webhook endpoint got export.completed for every run, with the run as the API shows it.
    const messages = await db().webhookMessage.findMany({ where: { endpointId: endpoint.id } });
    expect(messages.filter(({ eventType }) => eventType === "export.completed")).toHaveLength(9);
    const body = JSON.parse(messages[0]!.payload);
    expect(body.data).toEqual(await exportRun(account.id, body.data.id));
  });

  it("list a buyer's runs newest first, page by page, and never another buyer's", async () => {
    const account = await buyer("exports-api");
    const other = await buyer("exports-api-other");
    const { id: destinationId } = await createDestination(
      account.id,
      { name: "lake", ...destinations("api").s3 },
      OPERATOR,
    );
    const order = await createOrder({ buyerId: account.id, name: "api", status: "delivered" });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await exportNow({ orderId: order.id, destinationId }))[0]!.id, ...[]);
    // A pending manual run is reused by the next Export now: five clicks, one run.
    expect(new Set(ids).size).toBe(1);
    await runExport(ids[0]!);
    for (let i = 0; i < 4; i++) {
      const [run] = await exportNow({ orderId: order.id, destinationId });
      await runExport(run!.id);
    }
    const all = await exportRunPage(account.id, { limit: 50, offset: 0 });
    expect(all.data).toHaveLength(5);
    expect(all.next_offset).toBeNull();
    const pages = [await exportRunPage(account.id, { limit: 2, offset: 0 })];
    while (pages.at(-1)!.next_offset !== null) {
      pages.push(await exportRunPage(account.id, { limit: 2, offset: pages.at(-1)!.next_offset! }));
    }
    expect(pages.flatMap((page) => page.data.map((run) => run.id))).toEqual(all.data.map((run) => run.id));
    const created = await db().exportRun.findMany({
      where: { buyerId: account.id },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    });
    expect(all.data.map((run) => run.id)).toEqual(created.map((run) => run.id));
    expect(await exportRun(account.id, all.data[0]!.id)).toEqual(all.data[0]);
    for (const [buyerId, id] of [
      [other.id, all.data[0]!.id],
      [account.id, "exr_00000000000000000000000000000000"],
      [account.id, "not-an-id"],
      [account.id, `${all.data[0]!.id}'--`],
    ] as const) {
      await expect(exportRun(buyerId, id)).rejects.toMatchObject({ code: "export_not_found" });
    }
    expect((await exportRunPage(other.id, { limit: 50, offset: 0 })).data).toEqual([]);
  });

  it("export a rendition format when asked; a table's new version in the run its version starts", async () => {
    const account = await buyer("exports-jsonl");
    const { id: destinationId } = await createDestination(
      account.id,
      {
        name: "jsonl",
        ...destinations("jsonl").azure,
        format: "jsonl",
        template: "{date}/{order_id}/{file_name}",
      },
      OPERATOR,
    );
    const order = await createOrder({ buyerId: account.id, name: "data", status: "unfinished" });
    const csv = await addOrderFile({
      orderId: order.id,
      name: "products.csv",
      source: Readable.from([Buffer.from("id,name\n1,mug\n")]),
    });
    await addOrderFile({ orderId: order.id, name: "photo.bin", source: Readable.from([randomBytes(100)]) });
    await setOrderStatus(order.id, "delivered");
    // The CSV's publication is not a version yet: the delivery's run leaves it to the run its version starts.
    const [delivered] = await db().exportRun.findMany({ where: { destinationId } });
    expect(await runExport(delivered!.id)).toMatchObject({ result: "completed", files: 1 });
    await processPendingNow();
    const [versionRun] = await db().exportRun.findMany({ where: { destinationId, trigger: "table_updated" } });
    expect(versionRun).toMatchObject({ tableName: "products", tableVersion: 1 });
    // The JSON Lines rendition is not made yet: the run asks for it and waits, its attempt not counted.
    expect(await runExport(versionRun!.id)).toMatchObject({
      result: "waiting",
      reason: expect.stringMatching(/jsonl rendition of products\.csv/),
    });
    await handleRenditionJob({ fileId: csv.id, format: "jsonl" });
    expect(await runExport(versionRun!.id, { now: () => new Date(Date.now() + 20_000) })).toMatchObject({
      result: "completed",
      files: 1,
    });
    const rendition = await db().fileRendition.findUniqueOrThrow({
      where: { fileId_format: { fileId: csv.id, format: "jsonl" } },
    });
    const date = new Date().toISOString().slice(0, 10);
    const names = await azurite.blobNames("lake");
    expect(names).toEqual(
      expect.arrayContaining([
        `jsonl/${date}/${order.id}/products.jsonl`,
        `jsonl/${date}/${order.id}/photo.bin`,
        `jsonl/${date}/${order.id}/_manifest.json`,
      ]),
    );
    const lines = await azurite.blob("lake", `jsonl/${date}/${order.id}/products.jsonl`);
    expect(sha256(lines!.bytes)).toBe(rendition.sha256);
    expect(JSON.parse(lines!.bytes.toString().trim())).toEqual({ id: 1, name: "mug" });
  });

  it("retry a store that refuses the credentials on the schedule, then fail the run, with no secret in any message", async () => {
    const account = await buyer("exports-refused");
    const wrong = {
      s3: {
        ...destinations("refused").s3,
        fields: { ...destinations("refused").s3.fields, secret_access_key: "wrong-secret-8d1f0a" },
      },
      azure: {
        ...destinations("refused").azure,
        fields: {
          ...destinations("refused").azure.fields,
          account_key: Buffer.from("wrong-account-key-5e2c").toString("base64"),
        },
      },
      sftp: {
        ...destinations("refused").sftp,
        fields: { ...destinations("refused").sftp.fields, password: "wrong-password-77ab" },
      },
    };
    const secrets = [
      "wrong-secret-8d1f0a",
      Buffer.from("wrong-account-key-5e2c").toString("base64"),
      "wrong-password-77ab",
    ];
    const ids: Record<string, string> = {};
    for (const [type, input] of Object.entries(wrong)) {
      ids[type] = (await createDestination(account.id, { name: `${type} refused`, ...input }, OPERATOR)).id;
      const tested = await testOwnDestination(account.id, ids[type]!, OPERATOR);
      expect(tested.ok).toBe(false);
      expect(tested.message).toMatch(/refused the (credentials|user name and key or password)/);
      for (const secret of secrets) expect(tested.message).not.toContain(secret);
    }
    const order = await createOrder({ buyerId: account.id, name: "refused", status: "unfinished" });
    await addOrderFile({ orderId: order.id, name: "a.csv", source: Readable.from([Buffer.from("a\n1\n")]) });
    await setOrderStatus(order.id, "delivered");
    for (const run of await db().exportRun.findMany({ where: { buyerId: account.id } })) {
      let clock = run.nextAttemptAt!.getTime();
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        const outcome = await runExport(run.id, { now: () => new Date(clock) });
        if (attempt < MAX_ATTEMPTS) {
          expect(outcome).toMatchObject({ result: "retry", error: expect.stringMatching(/refused/) });
          clock += RETRY_DELAYS_MS[attempt - 1]!;
        } else {
          expect(outcome).toMatchObject({ result: "failed" });
        }
        for (const secret of secrets) expect(JSON.stringify(outcome)).not.toContain(secret);
      }
      expect(RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0)).toBeGreaterThanOrEqual(24 * 3600_000);
      const failed = await exportRun(account.id, run.id);
      expect(failed).toMatchObject({ state: "failed", error: expect.stringMatching(/refused/) });
    }
    // Every run failed for 3 days: the next failure pauses the destination and e-mails its owner.
    const first = (await db().exportDestination.findUniqueOrThrow({ where: { id: ids.s3! } })).failingSince!;
    const [manual] = await exportNow({ orderId: order.id, destinationId: ids.s3 });
    await runExport(manual!.id, { now: () => new Date(first.getTime() + 3 * 24 * 3600_000 + 1000) });
    const paused = await db().exportDestination.findUniqueOrThrow({ where: { id: ids.s3! } });
    expect(paused).toMatchObject({
      enabled: false,
      pausedReason: expect.stringMatching(/every run failed for 3 days/),
    });
    const mails = await db().$queryRawUnsafe<{ data: { to: string; subject: string } }[]>(
      `SELECT data FROM pgboss.job WHERE name = 'mail'`,
    );
    expect(mails.map(({ data }) => data)).toContainEqual(
      expect.objectContaining({ to: account.email, subject: "An export destination was paused" }),
    );
    // The security log has every destination created and tested, never a secret.
    const events = await db().securityEvent.findMany({ where: { buyerId: account.id } });
    expect(events.map(({ kind }) => kind).sort()).toEqual(
      [...Array(3).fill("export_destination_created"), ...Array(3).fill("export_destination_tested")].sort(),
    );
    for (const secret of secrets) expect(JSON.stringify(events)).not.toContain(secret);
  });

  it("check a folder of many files with one listing, and copy again only what is missing", async () => {
    const account = await buyer("exports-listing");
    const made: Partial<Record<StoreType, string>> = {};
    for (const [type, input] of Object.entries(destinations("listing")) as [
      StoreType,
      { type: StoreType; fields: Record<string, unknown> },
    ][]) {
      made[type] = (
        await createDestination(account.id, { name: `${type} listing`, ...input, template: "{file_name}" }, OPERATOR)
      ).id;
    }
    const order = await createOrder({ buyerId: account.id, name: "many parts", status: "unfinished" });
    for (let i = 0; i < 12; i++) {
      await addOrderFile({ orderId: order.id, name: `part-${i}.bin`, source: Readable.from([randomBytes(1000 + i)]) });
    }
    const heads = {
      s3: vi.spyOn(S3Target.prototype, "head"),
      azure: vi.spyOn(AzureTarget.prototype, "head"),
      sftp: vi.spyOn(SftpTarget.prototype, "head"),
    };
    try {
      await setOrderStatus(order.id, "delivered");
      // Nothing there yet: one listing per store says so, and no key is asked about.
      for (const run of await db().exportRun.findMany({ where: { buyerId: account.id } })) {
        expect(await runExport(run.id)).toMatchObject({ result: "completed", files: 12, skipped: 0 });
      }
      for (const spy of Object.values(heads)) expect(spy).not.toHaveBeenCalled();
      for (const [type, id] of Object.entries(made) as [StoreType, string][]) {
        // One object removed from the store: Export now copies it alone again.
        const row = await db().exportDestination.findUniqueOrThrow({ where: { id } });
        const target = await openTarget(await openDestination(row));
        await target.delete("part-3.bin");
        await target.close();
        const [manual] = await exportNow({ orderId: order.id, destinationId: id, buyerId: account.id });
        expect(await runExport(manual!.id), type).toMatchObject({ result: "completed", files: 12, skipped: 11 });
      }
      // Azure's listing carries the sha256 of each blob, SFTP's skip is the first run's manifest (one query):
      // only S3, whose listings carry no metadata, asks about the keys listed with the same size.
      expect(heads.s3).toHaveBeenCalledTimes(11);
      expect(heads.azure).not.toHaveBeenCalled();
      expect(heads.sftp).not.toHaveBeenCalled();
      const landed = await objectAt("sftp", `upload/listing/part-3.bin`);
      expect(landed?.bytes.length).toBe(1003);
    } finally {
      for (const spy of Object.values(heads)) spy.mockRestore();
    }
  });

  it("change a destination: an empty secret keeps the stored one, a secret of the other kind replaces it", async () => {
    const account = await buyer("exports-change");
    const input = { name: "changing", ...destinations("changing").sftp };
    const { id } = await createDestination(account.id, input, OPERATOR);
    const kept = { ...input, fields: { ...input.fields, password: "" } };
    await updateDestination(account.id, id, { ...kept, name: "renamed" }, OPERATOR);
    expect(await testOwnDestination(account.id, id, OPERATOR)).toMatchObject({ ok: true });
    const switched = { ...input, fields: { ...input.fields, password: undefined, private_key: sftp.privateKey } };
    await updateDestination(account.id, id, switched, OPERATOR);
    expect(await testOwnDestination(account.id, id, OPERATOR)).toMatchObject({ ok: true });
    const row = await db().exportDestination.findUniqueOrThrow({ where: { id } });
    expect(row.secretsSealed).not.toContain(sftp.password);
    expect(JSON.stringify(row.config)).not.toContain(sftp.password);
    await expect(
      updateDestination(account.id, id, { ...input, type: "s3", fields: destinations("x").s3.fields }, OPERATOR),
    ).rejects.toThrow(/type cannot change/);
  });

  it("sign in to SFTP with a private key, and refuse a server whose host key changed before sending anything", async () => {
    const account = await buyer("exports-hostkey");
    const fields = { ...destinations("keyed").sftp.fields, password: undefined, private_key: sftp.privateKey };
    const { id } = await createDestination(account.id, { name: "keyed", type: "sftp", fields }, OPERATOR);
    expect(await testOwnDestination(account.id, id, OPERATOR)).toMatchObject({ ok: true });
    const pinned = sftp.fingerprint();
    await sftp.changeHostKey();
    const refused = await testOwnDestination(account.id, id, OPERATOR);
    expect(refused.ok).toBe(false);
    expect(refused.message).toContain(`not the pinned ${pinned}`);
    expect(refused.message).toContain(sftp.fingerprint());
  });
});
