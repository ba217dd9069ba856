import { createReadStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import type { QualityReport } from "../../lib/schemas/quality";
import { publishTable } from "../../lib/tables/publish";
import { releasePublication } from "../../lib/tables/quality-admin";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { publicationDone } from "./helpers";

/**
 * An empty refresh of a table (contract Part 6) on the production server's worker: a text part with
 * no row takes the table's columns, so the version it makes is 0 rows of the same columns, which
 * the quality gate holds (row_count_zero) until the seller releases it; never a part failed at
 * profile or a change of types. A header-only CSV and a JSON Lines part without a record alike.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;

beforeAll(async () => {
  env = await createTestEnvironment("empty_refresh");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "empty-refresh-"));
  orderId = (await order((await buyer("empty-refresh")).id)).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

/** Publishes one part named `name` holding `text` to `table` (keyed on id); its publication. */
async function publishText(table: string, name: string, text: string): Promise<string> {
  const file = path.join(workDir, name);
  await fs.writeFile(file, text);
  const published = await publishTable({
    orderId,
    table,
    key: ["id"],
    parts: [{ name, source: { stream: createReadStream(file) } }],
  });
  return published.publication;
}

/** Version 1 of `table` from `first`, then `empty`: held by row_count_zero, released as 0 rows of `types`. */
async function emptyRefreshIsHeld(table: string, first: [string, string], empty: [string, string], types: string[]) {
  expect(await publicationDone(await publishText(table, ...first), 240_000)).toMatchObject({
    status: "ready",
    version: 1,
  });
  const publication = await publishText(table, ...empty);
  const held = await publicationDone(publication, 240_000);
  expect(held, String(held.error)).toMatchObject({ status: "held", version: null });
  const { report } = await db().tablePublication.findUniqueOrThrow({ where: { id: publication } });
  const checks = (report as QualityReport).checks;
  expect(checks.find((check) => check.name === "row_count_zero")).toMatchObject({ outcome: "held" });
  await releasePublication(publication, "The source listed nothing today.");
  expect(await publicationDone(publication, 240_000)).toMatchObject({ status: "ready", version: 2 });
  const tableRow = await db().orderTable.findUniqueOrThrow({ where: { orderId_name: { orderId, name: table } } });
  const version = await db().tableVersion.findUniqueOrThrow({
    where: { tableId_version: { tableId: tableRow.id, version: 2 } },
  });
  expect(version.rows).toBe(0n);
  expect((version.columns as { type: string }[]).map((column) => column.type)).toEqual(types);
}

describe("an empty refresh", { timeout: 600_000 }, () => {
  it("a header-only CSV takes the table's types: held by row_count_zero, not failed as a type change", async () => {
    await emptyRefreshIsHeld(
      "csv_refresh",
      ["v1.csv", "id,city,price\n1,Paris,1.5\n2,Lyon,2.25\n"],
      ["v2.csv", "id,city,price\n"],
      ["BIGINT", "VARCHAR", "DOUBLE"],
    );
  });

  const records = ['{"id":1,"city":"Paris","price":1.5,"tags":["a"]}', '{"id":2,"city":"Lyon","price":2.25,"tags":[]}'];
  it.each([
    ["an empty file", "jsonl_empty", ""],
    ["blank lines only", "jsonl_blank", "\n\n"],
  ])("a JSON Lines part of %s takes the table's columns: held by row_count_zero", async (_, table, text) => {
    await emptyRefreshIsHeld(
      table,
      [`${table}-1.jsonl`, `${records.join("\n")}\n`],
      [`${table}-2.jsonl`, text],
      ["BIGINT", "VARCHAR", "DOUBLE", "VARCHAR[]"],
    );
  });
});
