import { createReadStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import {
  CHECK_DEFAULTS,
  CHECK_NAMES,
  type CheckName,
  type Quality,
  type QualityReport,
} from "../../lib/schemas/quality";
import { advancePublication } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { rejectPublication, releasePublication, tableChecks } from "../../lib/tables/quality-admin";
import { tableJson } from "../../lib/tables/queries";
import { runAdmin, runAdminJson } from "../helpers/admin";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";
import { parquetPart, type Row } from "./quality-parts";

/**
 * The quality gate (contract Part 6) on the production server's worker: every check at each level
 * with a generated pair of versions that trips it and one that does not, the gate (held, a later
 * publication waiting behind, released, rejected), the operator's bad input, and a simulated broken
 * scrape that must reach no buyer.
 */

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let orderId: string;
let buyerId: string;
let cliEnv: Record<string, string | undefined>;

beforeAll(async () => {
  env = await createTestEnvironment("quality");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "quality-"));
  const account = await buyer("quality");
  buyerId = account.id;
  orderId = (await order(account.id)).id;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  cliEnv = { DATABASE_URL: env.database.url, STORAGE_DIR: env.storageDir, DATASET_TEMP_DIR: path.join(workDir, "cli") };
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

/** Publishes one Parquet part of `rows` (id BIGINT, name VARCHAR, price DOUBLE, extra columns as given). */
async function publish(table: string, rows: Row[], options: { key?: string[]; types?: Record<string, string> } = {}) {
  const file = await parquetPart(workDir, rows, options.types);
  const published = await publishTable({
    orderId,
    table,
    key: options.key ?? ["id"],
    parts: [{ name: path.basename(file), source: { stream: createReadStream(file) } }],
  });
  return published.publication;
}

/** Waits until the publication is no longer processing, and answers its row. */
async function settled(publicationId: string) {
  await waitFor(
    async () =>
      !["uploading", "processing"].includes(
        (await db().tablePublication.findUniqueOrThrow({ where: { id: publicationId } })).status,
      ),
    240_000,
    `publication ${publicationId} to be judged`,
  );
  return db().tablePublication.findUniqueOrThrow({ where: { id: publicationId } });
}

async function versionOf(table: string, version: number) {
  const row = await db().orderTable.findUniqueOrThrow({ where: { orderId_name: { orderId, name: table } } });
  return db().tableVersion.findUnique({ where: { tableId_version: { tableId: row.id, version } } });
}

const base = (from = 1, count = 200): Row[] =>
  Array.from({ length: count }, (_, i) => ({
    id: from + i,
    name: `Product ${from + i}`,
    price: (from + i) * 1.5 + 0.25,
  }));

/** Per check: version 2 that trips it, and one that does not (version 1 is `base()`). */
const PAIRS: Record<CheckName, { tripped: () => Row[]; fine: () => Row[] }> = {
  row_count_zero: { tripped: () => [], fine: () => base() },
  row_count_drop: { tripped: () => base(1, 150), fine: () => base(1, 170) },
  deleted_fraction: { tripped: () => base(31), fine: () => base(11) },
  null_fraction_increase: {
    tripped: () => base().map((row, i) => (i % 4 === 0 ? { ...row, price: null } : row)),
    fine: () => base().map((row, i) => (i % 10 === 0 ? { ...row, price: null } : row)),
  },
  distinct_drop: {
    tripped: () => base().map((row) => ({ ...row, name: `Product ${Number(row.id) % 80}` })),
    fine: () => base().map((row) => ({ ...row, name: `Product ${Number(row.id) % 150}` })),
  },
  distribution_shift: {
    tripped: () => base().map((row) => ({ ...row, price: Number(row.price) * 10 })),
    fine: () => base(),
  },
};

describe("every check at each level", { timeout: 900_000 }, () => {
  const cases = CHECK_NAMES.flatMap((name) =>
    (["hold", "warn"] as const).flatMap((level) =>
      (["tripped", "fine"] as const).map((pair) => ({ name, level, pair, table: `${name}_${level}_${pair}` })),
    ),
  );

  /** The column a per-column check is tested on. */
  const COLUMN: Partial<Record<CheckName, string>> = {
    null_fraction_increase: "price",
    distinct_drop: "name",
    distribution_shift: "price",
  };

  it("holds or warns on a tripping version 2, passes the other", async () => {
    // Published one after the other (each upload is a transaction), judged by the worker meanwhile.
    const v1: string[] = [];
    for (const { table } of cases) v1.push(await publish(table, base()));
    for (const [index, { name, level, table }] of cases.entries()) {
      expect((await settled(v1[index]!)).status).toBe("ready");
      // Only the check under test is on, at the level under test, with its default threshold.
      const others = CHECK_NAMES.filter((other) => other !== name).map((other) => `${other}=0:off`);
      await tableChecks(orderId, table, [...others, `${name}=${CHECK_DEFAULTS[name].threshold}:${level}`]);
    }
    const v2: string[] = [];
    for (const { name, pair, table } of cases) v2.push(await publish(table, PAIRS[name][pair]()));
    for (const [index, { name, level, pair, table }] of cases.entries()) {
      const done = await settled(v2[index]!);
      const report = done.report as QualityReport;
      expect(new Set(report.checks.map((check) => check.name))).toEqual(new Set([name]));
      const check = report.checks.find((one) => one.column === (COLUMN[name] ?? null))!;
      const expected = pair === "fine" ? "passed" : level === "hold" ? "held" : "warned";
      expect({ table, outcome: check.outcome, level: check.level }).toEqual({ table, outcome: expected, level });
      expect(done.status).toBe(expected === "held" ? "held" : "ready");
      const version = await versionOf(table, 2);
      if (expected === "held") expect(version).toBeNull();
      else expect(version?.quality).toMatchObject({ status: expected, reason: null });
    }
  });
});

/** The publication's parts are profiled and have their Parquet renditions: only its turn is missing. */
async function partsReady(publicationId: string) {
  await waitFor(
    async () => {
      const parts = await db().orderFile.findMany({
        where: { publicationId },
        select: { renditions: { where: { format: "parquet", status: "ready" }, select: { storageKey: true } } },
      });
      return parts.length > 0 && parts.every((part) => part.renditions.length === 1);
    },
    240_000,
    `the parts of ${publicationId} to be ready`,
  );
}

describe("the gate", { timeout: 600_000 }, () => {
  it("holds a publication, keeps later ones waiting behind it, releases it, then rejects another", async () => {
    const table = "gate";
    expect((await settled(await publish(table, base()))).status).toBe("ready");
    const held = await publish(table, base(1, 100));
    expect(await settled(held)).toMatchObject({ status: "held", version: null });
    const later = await publish(table, base(1, 120));
    await partsReady(later);
    expect(await advancePublication(later)).toBe("waiting");
    expect((await db().tablePublication.findUniqueOrThrow({ where: { id: later } })).status).toBe("processing");

    const history = await runAdminJson<{
      publications: { id: string; status: string; report: QualityReport | null }[];
    }>(cliEnv, "table:versions", "--order", orderId, "--table", table);
    const shown = history.publications.find((publication) => publication.id === held)!;
    expect(shown.status).toBe("held");
    expect(shown.report!.checks.filter((check) => check.outcome === "held").map((check) => check.name)).toEqual([
      "row_count_drop",
      "deleted_fraction",
    ]);

    // Two operators at once: one wins, the other is told.
    const decisions = await Promise.allSettled([
      releasePublication(held, "Seller confirmed the catalog shrank."),
      releasePublication(held, "Me too."),
    ]);
    expect(decisions.filter((decision) => decision.status === "fulfilled")).toHaveLength(1);
    const refused = decisions.find((decision) => decision.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason.message).toMatch(/is not held: it was already released/);

    expect(await settled(held)).toMatchObject({ status: "ready", version: 2 });
    const v2 = await versionOf(table, 2);
    const quality = v2?.quality as Quality;
    expect(quality.status).toBe("released");
    expect(quality.checks.filter((check) => check.outcome === "held").map((check) => check.name)).toEqual([
      "row_count_drop",
      "deleted_fraction",
    ]);
    expect(["Seller confirmed the catalog shrank.", "Me too."]).toContain(quality.reason);
    expect(await settled(later)).toMatchObject({ status: "ready", version: 3 });

    for (const [args, message] of [
      [
        ["table:release", "--publication", held, "--reason", "again"],
        /not held: it was already released and is version 2/,
      ],
      [["table:reject", "--publication", held, "--reason", "too late"], /not held: it was already released/],
      [["table:release", "--publication", "pub_unknown", "--reason", "x"], /no publication "pub_unknown"/],
    ] as const) {
      const result = await runAdmin(cliEnv, ...args);
      expect([result.code, result.stderr]).toEqual([1, expect.stringMatching(message)]);
    }

    const rejected = await publish(table, base(1, 10));
    expect((await settled(rejected)).status).toBe("held");
    const after = await publish(table, base(1, 118));
    await rejectPublication(rejected, "A broken scrape.");
    expect(await settled(rejected)).toMatchObject({
      status: "failed",
      error: "Rejected by the operator: A broken scrape.",
    });
    await expect(releasePublication(rejected, "no")).rejects.toThrow(/already rejected/);
    expect(await settled(after)).toMatchObject({ status: "ready", version: 4 });
  });
});

describe("an empty first version", { timeout: 600_000 }, () => {
  it("is held by row_count_zero and hidden from buyers until released", async () => {
    const held = await publish("held_first", []);
    expect(await settled(held)).toMatchObject({ status: "held", version: null });
    const seen = JSON.parse(await tableJson(buyerId, orderId, "held_first")) as { version: number | null };
    expect(seen.version).toBeNull();
    await releasePublication(held, "The seller starts this table empty.");
    expect(await settled(held)).toMatchObject({ status: "ready", version: 1 });
    const released = JSON.parse(await tableJson(buyerId, orderId, "held_first")) as { version: number; rows: number };
    expect(released).toMatchObject({ version: 1, rows: 0 });
    expect(((await versionOf("held_first", 1))?.quality as Quality).status).toBe("released");
  });
});

describe("bad input", { timeout: 600_000 }, () => {
  it("refuses thresholds outside 0..1, NaN and unknown names, changing nothing", async () => {
    expect((await settled(await publish("thresholds", base(1, 5)))).status).toBe("ready");
    for (const set of ["row_count_drop=-1", "row_count_drop=2", "row_count_drop=NaN", "bogus=0.1"]) {
      const result = await runAdmin(
        cliEnv,
        "table:checks",
        "--order",
        orderId,
        "--table",
        "thresholds",
        "--set",
        "distinct_drop=0.9:hold",
        "--set",
        set,
      );
      expect([result.code, result.stderr]).toEqual([1, expect.stringMatching(/from 0 to 1|no check named "bogus"/)]);
    }
    const shown = await runAdminJson<{
      checks: { name: string; threshold: number; level: string; default: boolean }[];
    }>(cliEnv, "table:checks", "--order", orderId, "--table", "thresholds");
    expect(shown.checks.every((check) => check.default)).toBe(true);
    const changed = await runAdminJson<{ checks: { name: string; threshold: number; level: string }[] }>(
      cliEnv,
      "table:checks",
      "--order",
      orderId,
      "--table",
      "thresholds",
      "--set",
      "distinct_drop=0.9:hold",
    );
    expect(changed.checks.find((check) => check.name === "distinct_drop")).toMatchObject({
      threshold: 0.9,
      level: "hold",
    });
  });

  it("takes an all-null column in both versions, a previous version of 0 rows and 1,000 columns; refuses a type change", async () => {
    const nulls = (rows: Row[]) => rows.map((row) => ({ ...row, note: null }));
    expect((await settled(await publish("all_null", nulls(base()), { types: { note: "DOUBLE" } }))).status).toBe(
      "ready",
    );
    const second = await settled(await publish("all_null", nulls(base()), { types: { note: "DOUBLE" } }));
    expect(second.status).toBe("ready");
    expect((second.report as QualityReport).columns.find((column) => column.name === "note")).toMatchObject({
      null_fraction: 1,
      previous_null_fraction: 1,
    });

    await tableChecksAfterFirst("empty_first", []);
    const grown = await settled(await publish("empty_first", base(1, 10)));
    expect(grown.status).toBe("ready");
    const names = (grown.report as QualityReport).checks.map((check) => check.name);
    expect(names).not.toContain("row_count_drop");
    expect((grown.report as QualityReport).previous_rows).toBe(0);

    const wide = (seed: number) =>
      Array.from({ length: 20 }, (_, r) =>
        Object.fromEntries([["id", r + 1], ...Array.from({ length: 999 }, (_, c) => [`c${c}`, (r + c + seed) % 7])]),
      );
    const types = Object.fromEntries(Array.from({ length: 999 }, (_, c) => [`c${c}`, "INTEGER"]));
    expect((await settled(await publish("wide", wide(0), { types }))).status).toBe("ready");
    const wide2 = await settled(await publish("wide", wide(0), { types }));
    expect(wide2.status).toBe("ready");
    expect((wide2.report as QualityReport).columns).toHaveLength(1000);

    const widened = await settled(await publish("all_null", nulls(base()), { types: { note: "VARCHAR" } }));
    expect(widened).toMatchObject({ status: "failed", error: expect.stringMatching(/keeps its type/) });
    expect((await db().orderTable.findFirstOrThrow({ where: { orderId, name: "all_null" } })).currentVersion).toBe(2);
  });
});

/** Version 1 of `table` with `rows`, made with row_count_zero off (an empty first version is otherwise held). */
async function tableChecksAfterFirst(table: string, rows: Row[]) {
  const first = await publish(table, rows);
  const done = await settled(first);
  if (done.status === "held") {
    await tableChecks(orderId, table, ["row_count_zero=0:off"]);
    await releasePublication(first, "An empty first version, on purpose.");
  }
  expect(await settled(first)).toMatchObject({ status: "ready", version: 1 });
}

describe("a broken scrape", { timeout: 600_000 }, () => {
  it("40% of the rows gone and a column null: no version, no change rows, no export run, no table.updated", async () => {
    await db().webhookEndpoint.create({
      data: {
        buyerId,
        url: "https://hooks.example.com/x",
        secretSealed: "x",
        secretHint: "x",
        events: ["table.updated"],
      },
    });
    await db().exportDestination.create({
      data: {
        buyerId,
        name: "lake",
        type: "s3",
        config: {},
        secretsSealed: "x",
        orderIds: [],
        keyTemplate: "{table}/{file}",
        enabled: true,
      },
    });
    const count = async () => ({
      versions: await db().tableVersion.count({ where: { table: { orderId, name: "scrape" } } }),
      changeFiles: await db().orderFile.count({
        where: { orderId, origin: "change_feed", name: { startsWith: "scrape." } },
      }),
      runs: await db().exportRun.count({ where: { tableName: "scrape" } }),
      events: await db().webhookMessage.count({
        where: { eventType: "table.updated", payload: { contains: '"scrape"' } },
      }),
    });
    expect((await settled(await publish("scrape", base(1, 500)))).status).toBe("ready");
    const before = await count();
    expect(before).toEqual({ versions: 1, changeFiles: 1, runs: 1, events: 1 });
    const broken = await settled(
      await publish(
        "scrape",
        base(1, 300).map((row) => ({ ...row, price: null })),
      ),
    );
    expect(broken.status).toBe("held");
    expect(
      (broken.report as QualityReport).checks
        .filter((check) => check.outcome === "held")
        .map((check) => [check.name, check.column]),
    ).toEqual([
      ["row_count_drop", null],
      ["deleted_fraction", null],
      ["null_fraction_increase", "price"],
    ]);
    expect(await count()).toEqual(before);
  });
});
