import { promises as fs } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAILED_PARTS_KEPT_DAYS } from "../../lib/contract";
import { db } from "../../lib/db/client";
import { tableHistory } from "../../lib/tables/admin";
import { sweepFailedParts } from "../../lib/tables/failed-parts";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { rejectPublication } from "../../lib/tables/quality-admin";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { products, productsCsv } from "./helpers";

/**
 * The removal of failed and rejected publications' parts (contract Part 8), FAILED_PARTS_KEPT_DAYS
 * after the decision: the decision's time is moved back in the database, the sweep is given the
 * time it runs at; nothing waits. The publications are made by the pipeline in this process.
 */

let env: TestEnvironment;
let orderId: string;

beforeAll(async () => {
  env = await createTestEnvironment("failed_parts");
  orderId = (await order((await buyer("failed-parts")).id)).id;
}, 120_000);

afterAll(async () => {
  await env?.cleanup();
});

async function publish(table: string, name: string, rows: ReturnType<typeof products>) {
  const published = await publishTable({
    orderId,
    table,
    key: ["id"],
    parts: [{ name, source: { stream: Readable.from([Buffer.from(productsCsv(rows))]) } }],
  });
  await processPendingNow();
  return db().tablePublication.findUniqueOrThrow({
    where: { id: published.publication },
    select: { id: true, status: true },
  });
}

/** The part's stored objects (its own and its renditions'), as paths under STORAGE_DIR. */
async function objectsOf(publicationId: string): Promise<string[]> {
  const parts = await db().orderFile.findMany({
    where: { publicationId },
    select: { storageKey: true, renditions: { select: { storageKey: true } } },
  });
  return parts.flatMap((part) =>
    [part.storageKey, ...part.renditions.map((rendition) => rendition.storageKey)]
      .filter((key): key is string => key !== null)
      .map((key) => path.join(env.storageDir, key)),
  );
}

const exists = (file: string) =>
  fs.access(file).then(
    () => true,
    () => false,
  );

/** Moves the publication's decision `days` back. */
async function decidedDaysAgo(publicationId: string, days: number, at: Date) {
  await db().tablePublication.update({
    where: { id: publicationId },
    data: { finishedAt: new Date(at.getTime() - days * 86_400_000) },
  });
}

describe("the sweep of failed and rejected publications' parts", { timeout: 300_000 }, () => {
  it("removes them 7 days after the decision, rows and objects, keeping the seller's registered objects", async () => {
    expect(FAILED_PARTS_KEPT_DAYS).toBe(7);
    // A duplicate key fails a publication; a refresh that loses most rows is held, then rejected.
    const twice = [...products(1, 5), ...products(1, 1)];
    const ready = await publish("kept", "kept-1.csv", products(1, 300));
    const old = await publish("old_failure", "old-failure.csv", twice);
    const recent = await publish("recent_failure", "recent-failure.csv", twice);
    const registered = await publish("registered_failure", "registered-failure.csv", twice);
    expect((await publish("rejected", "rejected-1.csv", products(1, 300))).status).toBe("ready");
    const held = await publish("rejected", "rejected-2.csv", products(1, 50));
    expect([ready.status, old.status, recent.status, registered.status, held.status]).toEqual([
      "ready",
      "failed",
      "failed",
      "failed",
      "held",
    ]);
    await rejectPublication(held.id, "A broken scrape.");

    const at = new Date();
    await decidedDaysAgo(old.id, 7.01, at);
    await decidedDaysAgo(recent.id, 6.99, at);
    await decidedDaysAgo(registered.id, 8, at);
    await decidedDaysAgo(held.id, 30, at);
    // As if registered with --from s3://: the seller's object, which this app never deletes.
    await db().orderFile.updateMany({ where: { publicationId: registered.id }, data: { registered: true } });
    const oldObjects = await objectsOf(old.id);
    const recentObjects = await objectsOf(recent.id);
    const registeredObjects = await objectsOf(registered.id);
    const heldObjects = await objectsOf(held.id);
    const readyObjects = await objectsOf(ready.id);
    for (const file of [...oldObjects, ...recentObjects, ...registeredObjects, ...heldObjects, ...readyObjects]) {
      expect(await exists(file), file).toBe(true);
    }
    const before = await tableHistory(orderId, "rejected");
    expect(before.publications.find((publication) => publication.id === held.id)?.files).toEqual([
      { id: expect.stringMatching(/^fil_/), name: "rejected-2.csv", size: expect.any(Number) },
    ]);

    expect(await sweepFailedParts(at)).toBe(3);

    const partsLeft = async (publicationId: string) => db().orderFile.count({ where: { publicationId } });
    expect(await partsLeft(old.id)).toBe(0);
    expect(await partsLeft(held.id)).toBe(0);
    expect(await partsLeft(registered.id)).toBe(0);
    expect(await partsLeft(recent.id)).toBe(1);
    expect(await partsLeft(ready.id)).toBe(1);
    for (const file of [...oldObjects, ...heldObjects]) expect(await exists(file), file).toBe(false);
    // The registered part's own object stays; its renditions, made here, go.
    const [registeredOriginal, ...registeredRenditions] = registeredObjects;
    expect(await exists(registeredOriginal!)).toBe(true);
    expect(registeredRenditions.length).toBeGreaterThan(0);
    for (const file of registeredRenditions) expect(await exists(file), file).toBe(false);
    for (const file of [...recentObjects, ...readyObjects]) expect(await exists(file), file).toBe(true);
    // The publication stays in table:versions with its reason, its files gone.
    const after = await tableHistory(orderId, "rejected");
    expect(after.publications.find((publication) => publication.id === held.id)).toMatchObject({
      status: "failed",
      error: "Rejected by the operator: A broken scrape.",
      parts: ["rejected-2.csv"],
      files: [],
    });

    // The next sweep finds nothing more until the recent one's time comes.
    expect(await sweepFailedParts(at)).toBe(0);
    expect(await sweepFailedParts(new Date(at.getTime() + 86_400_000))).toBe(1);
    expect(await partsLeft(recent.id)).toBe(0);
  });
});
