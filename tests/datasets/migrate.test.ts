import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { profileStoredFile } from "../../lib/datasets/profile";
import { makeRendition } from "../../lib/datasets/renditions";
import { db } from "../../lib/db/client";
import { migrateLocalFilesToS3 } from "../../lib/storage/migrate";
import { readS3Object } from "../../lib/storage/s3";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, type TestS3 } from "../helpers/s3";
import { PRODUCT_ROWS, productsCsv } from "./helpers";

/** `storage:migrate --to s3` moves a file's renditions with it and keeps its profile. */

let env: TestEnvironment;
let s3: TestS3;

beforeAll(async () => {
  env = await createTestEnvironment("datasets_migrate");
  s3 = await startTestS3();
});

afterAll(async () => {
  await s3?.stop();
  await env?.cleanup();
});

async function sha256Of(location: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of (await readS3Object(location)).body) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

describe("storage:migrate with renditions", () => {
  it("copies the file and its Parquet rendition, verified, and keeps the profile", async () => {
    process.env.STORAGE_DRIVER = "local";
    const account = await buyer("datasets-migrate");
    const delivered = await order(account.id, { files: { "products.csv": Buffer.from(productsCsv()) } });
    const fileId = delivered.files[0]!.id;
    expect(await profileStoredFile(fileId, { queueRendition: false })).toBe("ready");
    expect(await makeRendition(fileId, "parquet")).toBe("ready");
    const before = await db().orderFile.findUniqueOrThrow({ where: { id: fileId }, include: { renditions: true } });
    expect(before.renditions[0]!.storageKey).not.toMatch(/^s3:/);

    Object.assign(process.env, s3.env);
    const report = await migrateLocalFilesToS3({});
    expect(report).toMatchObject({ total: 2, migrated: 2, failed: [] });

    const after = await db().orderFile.findUniqueOrThrow({ where: { id: fileId }, include: { renditions: true } });
    expect(after).toMatchObject({ profileStatus: "ready", rows: BigInt(PRODUCT_ROWS), columns: before.columns });
    expect(after.storageKey).toMatch(/^s3:\/\//);
    const [parquet] = after.renditions;
    expect(parquet).toMatchObject({ format: "parquet", status: "ready", sha256: before.renditions[0]!.sha256 });
    expect(parquet!.storageKey).toMatch(/^s3:\/\//);
    expect(await sha256Of(parquet!.storageKey!)).toBe(parquet!.sha256);
    expect(await sha256Of(after.storageKey)).toBe(after.sha256);
  });
});
