import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db, sqlQuery } from "../../lib/db/client";
import { exportRun } from "../../lib/exports/api";
import { decideRun } from "../../lib/exports/approval";
import { createDestination } from "../../lib/exports/destinations";
import { queueExportRuns, requeueStrandedRuns, runExport } from "../../lib/exports/runs";
import { setOrderStatus } from "../../lib/operator/orders";
import { closeJobQueue, jobTransaction, QUEUES } from "../../lib/queue";
import { exportRunSchema } from "../../lib/schemas/exports";
import type { Quality } from "../../lib/schemas/quality";
import { OPERATOR } from "../../lib/security/log";
import { processPendingNow } from "../../lib/tables/pipeline";
import { withoutQualityChecks } from "../tables/helpers";
import { publishTable } from "../../lib/tables/publish";
import { runAdminJson, runAdmin } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { TEST_AUTH_SECRET } from "../helpers/server";

/**
 * Destinations' `approval` (contract Part 6): with on_warning, the table.updated run of a version
 * whose quality is not passed is made awaiting_approval with no job (no worker, sweep or attempt
 * takes it) until the buyer approves it (pending, then it runs to completed against a real S3
 * store on loopback) or skips it (skipped). A destination with none exports every version; a
 * passed version (or one made before the checks) never waits. Versions' qualities are written
 * here as the gate stores them; runs are queued by the function the pipeline calls in the
 * version's transaction.
 */

const LAKE_BUCKET = "approvals-lake";
const warned: Quality = {
  status: "warned",
  reason: null,
  checks: [
    { name: "distribution_shift", column: "price", value: 0.4, threshold: 0.25, level: "warn", outcome: "warned" },
  ],
};
const released: Quality = {
  status: "released",
  reason: "The price drop is real: a sale.",
  checks: [{ name: "row_count_drop", column: null, value: 0.5, threshold: 0.2, level: "hold", outcome: "held" }],
};

let env: TestEnvironment;
let s3: TestS3;
const fixtures = {} as { buyerId: string; otherBuyer: string; orderId: string; strict: string; plain: string };

beforeAll(async () => {
  env = await createTestEnvironment("approvals");
  s3 = await startTestS3({ buckets: [TEST_BUCKET, LAKE_BUCKET] });
  Object.assign(process.env, s3.env, {
    AUTH_SECRET: TEST_AUTH_SECRET,
    EXPORT_SECRETS_KEY: randomBytes(32).toString("base64"),
    EXPORT_ALLOW_PRIVATE: "true",
  });
  const account = await buyer("approvals");
  fixtures.buyerId = account.id;
  fixtures.otherBuyer = (await buyer("approvals-other")).id;
  // Not delivered while its versions are made, so none is queued before its quality is stored.
  fixtures.orderId = (await order(account.id, { status: "unfinished" })).id;
  for (const [index, rows] of ["1,3\n2,4\n", "1,3\n2,9\n", "1,3\n"].entries()) {
    await publishTable({
      orderId: fixtures.orderId,
      table: "prices",
      key: ["id"],
      parts: [
        { name: `prices-${index + 1}.csv`, source: { stream: Readable.from([Buffer.from(`id,price\n${rows}`)]) } },
      ],
    });
    await processPendingNow();
    // Versions 2 and 3 drop and delete rows: the gate is off here, their quality is written below.
    if (index === 0) await withoutQualityChecks(fixtures.orderId, "prices");
  }
  for (const [version, quality] of [
    [2, warned],
    [3, released],
  ] as const) {
    await db().tableVersion.updateMany({
      where: { version, table: { orderId: fixtures.orderId, name: "prices" } },
      data: { quality },
    });
  }
  await setOrderStatus(fixtures.orderId, "delivered");
  const s3Fields = (prefix: string) => ({
    bucket: LAKE_BUCKET,
    region: "us-east-1",
    endpoint: s3.endpoint,
    force_path_style: true,
    prefix,
    access_key_id: "S3RVER",
    secret_access_key: "S3RVER",
  });
  fixtures.strict = (
    await createDestination(
      account.id,
      { name: "strict", type: "s3", fields: s3Fields("strict/"), approval: "on_warning" },
      OPERATOR,
    )
  ).id;
  fixtures.plain = (
    await createDestination(account.id, { name: "plain", type: "s3", fields: s3Fields("plain/") }, OPERATOR)
  ).id;
  for (const version of [1, 2, 3]) {
    await jobTransaction((tx) =>
      queueExportRuns(tx, {
        buyerId: account.id,
        orderId: fixtures.orderId,
        trigger: "table.updated",
        table: "prices",
        version,
      }),
    );
  }
}, 240_000);

afterAll(async () => {
  await closeJobQueue();
  await s3?.stop();
  await env?.cleanup();
});

const runOf = (destinationId: string, version: number) =>
  db().exportRun.findFirstOrThrow({ where: { destinationId, tableVersion: version } });
const jobsOf = async (runId: string) =>
  (
    await sqlQuery<{ count: number }>(
      `SELECT count(*)::int AS count FROM pgboss.job WHERE name = $1 AND data->>'runId' = $2`,
      [QUEUES.exportRun, runId],
    )
  )[0]!.count;

describe("runs of a version whose quality is not passed", { timeout: 120_000 }, () => {
  it("wait for approval, with no job, only at a destination with on_warning", async () => {
    const states = [];
    for (const version of [1, 2, 3]) {
      const strict = await runOf(fixtures.strict, version);
      const plain = await runOf(fixtures.plain, version);
      states.push([version, strict.state, await jobsOf(strict.id), plain.state, await jobsOf(plain.id)]);
    }
    expect(states).toEqual([
      [1, "pending", 1, "pending", 1],
      [2, "awaiting_approval", 0, "pending", 1],
      [3, "awaiting_approval", 0, "pending", 1],
    ]);
    const view = exportRunSchema
      .strict()
      .parse(await exportRun(fixtures.buyerId, (await runOf(fixtures.strict, 2)).id));
    expect(view).toMatchObject({ state: "awaiting_approval", trigger: "table.updated", finished_at: null });
  });

  it("are taken by no attempt and no sweep while they wait", async () => {
    const waiting = await runOf(fixtures.strict, 2);
    expect(await runExport(waiting.id)).toEqual({ result: "skipped", reason: "awaiting the buyer's approval" });
    await requeueStrandedRuns(new Date(Date.now() + 24 * 3600_000));
    expect(await jobsOf(waiting.id)).toBe(0);
    expect(await runOf(fixtures.strict, 2)).toMatchObject({ state: "awaiting_approval", attempts: 0, startedAt: null });
  });

  it("are refused to another buyer, and to a malformed id, as missing", async () => {
    const waiting = await runOf(fixtures.strict, 2);
    await expect(decideRun(fixtures.otherBuyer, waiting.id, "approve")).rejects.toMatchObject({
      code: "export_not_found",
    });
    await expect(decideRun(fixtures.buyerId, "exr_%00", "skip")).rejects.toMatchObject({ code: "export_not_found" });
    expect(await runOf(fixtures.strict, 2)).toMatchObject({ state: "awaiting_approval" });
  });

  it("run to completed into the store once approved; a second approval is refused", async () => {
    const waiting = await runOf(fixtures.strict, 2);
    expect(await decideRun(fixtures.buyerId, waiting.id, "approve")).toEqual({ state: "pending" });
    expect(await jobsOf(waiting.id)).toBe(1);
    await expect(decideRun(fixtures.buyerId, waiting.id, "approve")).rejects.toThrow(
      "This export run is pending, not awaiting approval: there is nothing to approve.",
    );
    expect(await runExport(waiting.id)).toMatchObject({ result: "completed", files: 1 });
    const done = await runOf(fixtures.strict, 2);
    expect(done).toMatchObject({ state: "completed", error: null });
    const keys = await s3.objectKeys(LAKE_BUCKET);
    expect(keys).toContain(done.manifestKey);
    expect(keys.some((key) => key.startsWith("strict/") && key.endsWith("/v2/prices-2.csv"))).toBe(true);
  });

  it("end as skipped when skipped, and then are neither run nor approved", async () => {
    const waiting = await runOf(fixtures.strict, 3);
    expect(await decideRun(fixtures.buyerId, waiting.id, "skip")).toEqual({ state: "skipped" });
    const skipped = await runOf(fixtures.strict, 3);
    expect(skipped).toMatchObject({ state: "skipped", attempts: 0 });
    expect(skipped.finishedAt).toBeInstanceOf(Date);
    expect(exportRunSchema.parse(await exportRun(fixtures.buyerId, waiting.id)).finished_at).toEqual(
      skipped.finishedAt!.toISOString(),
    );
    expect(await runExport(waiting.id)).toEqual({ result: "skipped", reason: "already skipped" });
    await expect(decideRun(fixtures.buyerId, waiting.id, "approve")).rejects.toThrow(
      /is skipped, not awaiting approval/,
    );
    const keys = await s3.objectKeys(LAKE_BUCKET);
    expect(keys.some((key) => key.startsWith("strict/") && key.includes("/v3/"))).toBe(false);
  });
});

describe("export:destination --approval", { timeout: 60_000 }, () => {
  it("sets the destination's approval, and refuses a value it does not know", async () => {
    const { writeFile, mkdtemp } = await import("node:fs/promises");
    const dir = await mkdtemp(`${process.env.TMPDIR ?? "/tmp"}/approvals-`);
    const config = `${dir}/s3.json`;
    await writeFile(
      config,
      JSON.stringify({
        bucket: LAKE_BUCKET,
        endpoint: s3.endpoint,
        access_key_id: "S3RVER",
        secret_access_key: "S3RVER",
      }),
    );
    const email = (await db().user.findUniqueOrThrow({ where: { id: fixtures.buyerId } })).email;
    const cliEnv = { DATABASE_URL: env.database.url, STORAGE_DIR: env.storageDir };
    const base = ["export:destination", "--email", email, "--type", "s3", "--config", config];
    const { id } = await runAdminJson<{ id: string }>(cliEnv, ...base, "--name", "cli", "--approval", "on_warning");
    expect(await db().exportDestination.findUniqueOrThrow({ where: { id } })).toMatchObject({ approval: "on_warning" });
    const refused = await runAdmin(cliEnv, ...base, "--name", "cli 2", "--approval", "always");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--approval: .*"none"\|"on_warning"/);
  });
});
