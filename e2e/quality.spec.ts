import { Readable } from "node:stream";
import { db } from "../lib/db/client";
import { publishTable } from "../lib/tables/publish";
import { releasePublication } from "../lib/tables/quality-admin";
import type { Check, Quality, QualityReport } from "../lib/schemas/quality";
import { buyer, order } from "../tests/helpers/fixtures";
import { expect, expectNoAxeViolations, screenshot, signIn, test } from "./helpers";
import { workerStateOf } from "./worker-state";

const REASON = "Site redesign: 40% of listings moved to a new category";

const held: Check = {
  name: "row_count_drop",
  column: null,
  value: 0.4,
  threshold: 0.2,
  level: "hold",
  outcome: "held",
};
const shifted: Check = {
  name: "distribution_shift",
  column: "price",
  value: 0.412,
  threshold: 0.25,
  level: "warn",
  outcome: "warned",
};
const passedNulls: Check = {
  name: "null_fraction_increase",
  column: "price",
  value: 0.05,
  threshold: 0.2,
  level: "hold",
  outcome: "passed",
};

const column = (name: string, type: string, nullFraction: number, previous: number | null, psi: number | null) => ({
  name,
  type,
  null_fraction: nullFraction,
  previous_null_fraction: previous,
  distinct: 600,
  previous_distinct: previous === null ? null : 1000,
  min: null,
  max: null,
  mean: null,
  psi,
});

/**
 * The versions a table's history shows, as the gate (branch wt-quality) stores them: version 1 from
 * before the checks (quality NULL, no report), version 2 held for a 40% row drop and released with a
 * reason, version 3 warned for a price shift and adding a column; a 4th publication still held is
 * no version and shows nowhere.
 */
const VERSIONS: { rows: number; changes: object; quality: Quality | null; report: QualityReport | null }[] = [
  { rows: 1000, changes: { inserted: 1000, updated: 0, deleted: 0 }, quality: null, report: null },
  {
    rows: 600,
    changes: { inserted: 0, updated: 20, deleted: 400 },
    quality: { status: "released", reason: REASON, checks: [held] },
    report: {
      rows: 600,
      previous_rows: 1000,
      changes: { inserted: 0, updated: 20, deleted: 400 },
      added_columns: [],
      columns: [column("sku", "VARCHAR", 0, 0, 0.01), column("price", "DOUBLE", 0.06, 0.01, 0.08)],
      checks: [held, passedNulls],
    },
  },
  {
    rows: 650,
    changes: { inserted: 50, updated: 120, deleted: 0 },
    quality: { status: "warned", reason: null, checks: [shifted] },
    report: {
      rows: 650,
      previous_rows: 600,
      changes: { inserted: 50, updated: 120, deleted: 0 },
      added_columns: ["currency"],
      columns: [
        column("sku", "VARCHAR", 0, 0, 0.02),
        column("price", "DOUBLE", 0.3, 0.06, 0.412),
        column("currency", "VARCHAR", 0, null, null),
      ],
      // 650 rows against 600: a drop of −8.3%, which is 8.3% more rows.
      checks: [{ ...held, value: -0.083333, outcome: "passed" }, shifted],
    },
  },
];

async function buyerWithJudgedTable(label: string) {
  const account = await buyer(label);
  const delivered = await order(account.id, { name: `${label}: judged prices`, status: "delivered" });
  const table = await db().orderTable.create({
    data: { orderId: delivered.id, name: "prices", key: ["sku"], currentVersion: VERSIONS.length },
  });
  for (const [index, version] of VERSIONS.entries()) {
    const publication = await db().tablePublication.create({
      data: {
        tableId: table.id,
        status: "ready",
        seq: index + 1,
        version: index + 1,
        report: version.report ?? undefined,
        reason: version.quality?.reason ?? null,
      },
    });
    await db().tableVersion.create({
      data: {
        tableId: table.id,
        version: index + 1,
        publicationId: publication.id,
        rows: version.rows,
        columns: [{ name: "sku", type: "VARCHAR", nullable: false }],
        changes: version.changes,
        quality: version.quality ?? undefined,
      },
    });
  }
  await db().tablePublication.create({
    data: { tableId: table.id, status: "held", seq: 4, report: { ...VERSIONS[1]!.report!, rows: 0 } },
  });
  return { ...account, delivered };
}

test("each version shows its quality badge and report, and the chart its rows and changes", async ({ page }) => {
  const account = await buyerWithJudgedTable("e2e-quality");
  await signIn(page, account.email);

  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`/orders/${account.delivered.id}`);
    const table = page.getByTestId("table-row").filter({ hasText: "prices" });
    await table.getByText(/^Version history \(3 versions\)/).click();
    const versions = table.getByTestId("version-row");
    // The held publication is no version: three are listed, newest first.
    await expect(versions).toHaveCount(3);
    const badges = versions.getByTestId("quality-badge");
    await expect(badges.nth(0)).toHaveText("Warned");
    await expect(badges.nth(1).getByText("Released", { exact: true })).toBeVisible();
    await expect(badges.nth(1).getByTestId("quality-reason")).toHaveText(`Held, then released: ${REASON}`);
    await expect(badges.nth(2)).toHaveText("Passed");

    // Version 2's report: the drop that held it, its rows against version 1, its columns' nulls and PSI.
    const released = versions.nth(1).getByTestId("quality-report");
    await released.getByText("Quality report").click();
    await expect(released.getByTestId("quality-rows")).toHaveText("600 (previous 1,000, −40.0%)");
    // Each check in words, never its raw id; on a phone every figure of it is on screen.
    const drop = released.getByTestId("quality-check").nth(0);
    await expect(drop.getByRole("definition")).toHaveText([
      "Rows lost since the previous version",
      "whole table",
      "40.0% fewer rows",
      "over 20.0% fewer",
      "Holds the version",
      "Held",
    ]);
    await expect(released).not.toContainText("row_count_drop");
    for (const shown of await drop.getByRole("definition").all()) {
      const box = (await shown.boundingBox())!;
      expect(box.x + box.width, "each figure of a check on screen").toBeLessThanOrEqual(width);
    }
    await expect(released.getByTestId("quality-column").filter({ hasText: "price" }).getByRole("cell")).toHaveText([
      "DOUBLE",
      "6.0%",
      "1.0%",
      "600",
      "0.080",
    ]);
    // Version 3 adds a column and warns of the price shift; version 1 kept no report.
    const warned = versions.nth(0).getByTestId("quality-report");
    await warned.getByText("Quality report").click();
    await expect(warned.getByTestId("quality-added-columns")).toHaveText("currency");
    await expect(warned.getByTestId("quality-check").filter({ hasText: "Shift of the values (PSI)" })).toContainText(
      "0.412",
    );
    // A table that grew reads as more rows, not as a negative drop.
    await expect(
      warned.getByTestId("quality-check").filter({ hasText: "Rows lost since the previous version" }),
    ).toContainText("8.3% more rows");
    await expect(warned.getByTestId("quality-psi-meaning")).toContainText("PSI (population stability index)");
    await versions.nth(2).getByText("Quality report").click();
    await expect(versions.nth(2).getByTestId("quality-report")).toContainText("No report was kept");

    // The chart: drawn by recharts in its box, named for screen readers, its numbers in a table.
    const chart = table.getByTestId("version-chart");
    await expect(chart.getByRole("img")).toHaveAccessibleName(
      "Rows and changes of prices over versions 1 to 3: 1,000 rows at version 1, 650 at version 3, 1,590 rows changed in all.",
    );
    const drawn = chart.getByTestId("version-chart-drawn");
    await expect(drawn.locator("svg.recharts-surface").first()).toBeVisible();
    await expect(drawn.locator(".recharts-bar-rectangle")).not.toHaveCount(0);
    await expect(drawn.locator(".recharts-line-curve")).toHaveCount(1);
    // Rows (1,000 at most) and changes (1,000 at most) are alike: one titled scale, not two of the same
    // range; the legend in reading order, the line first.
    await expect(chart).toHaveAttribute("data-scales", "1");
    await expect(drawn.locator(".recharts-yAxis")).toHaveCount(1);
    await expect(drawn.locator("svg text").filter({ hasText: /^Rows/ })).toHaveText(["Rows"]);
    await expect(drawn.locator(".recharts-legend-item-text")).toHaveText(["Rows", "Inserted", "Updated", "Deleted"]);
    const box = (await drawn.boundingBox())!;
    expect(box.x + box.width, "chart within the screen").toBeLessThanOrEqual(width);
    await chart.getByText("Show the numbers").click();
    await expect(chart.getByTestId("version-chart-numbers").locator("tbody tr")).toHaveText([
      /^11,0001,00000$/,
      /^2600020400$/,
      /^3650501200$/,
    ]);

    expect(
      await page.evaluate(() => document.documentElement.scrollWidth),
      "nothing scrolls sideways",
    ).toBeLessThanOrEqual(width);
    const where = width < 640 ? "phone" : "desktop";
    await expectNoAxeViolations(page, `order page at ${where} width, quality reports and chart open`);
    await screenshot(page, `quality-${where}`);
  }
});

/** `count` prices, SKU-1 up. */
const pricesCsv = (count: number) =>
  `sku,title,price\n${Array.from({ length: count }, (_, i) => `SKU-${i + 1},Product ${i + 1},${(i + 1) * 2}`).join("\n")}\n`;

/** Waits until the server's worker has judged the publication: anything but uploading or processing. */
async function judged(publicationId: string) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const publication = await db().tablePublication.findUniqueOrThrow({
      where: { id: publicationId },
      include: { table: { select: { orderId: true } } },
    });
    if (publication.status !== "uploading" && publication.status !== "processing") return publication;
    if (Date.now() > deadline) {
      const state = await workerStateOf(publication.table.orderId);
      throw new Error(`Publication ${publicationId} was not judged within 120 s: ${state}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

test("a refresh the gate held for losing 40% of its rows, released by the operator, reads as released", async ({
  page,
}) => {
  const account = await buyer("e2e-quality-gate");
  const delivered = await order(account.id, { name: "e2e-quality-gate: prices", status: "delivered" });
  const publish = (rows: number) =>
    publishTable({
      orderId: delivered.id,
      table: "prices",
      key: ["sku"],
      parts: [{ name: `prices-${rows}.csv`, source: { stream: Readable.from([Buffer.from(pricesCsv(rows))]) } }],
    });
  expect((await judged((await publish(50)).publication)).status).toBe("ready");
  const broken = (await publish(30)).publication;
  expect((await judged(broken)).status).toBe("held");
  await releasePublication(broken, "Seller confirmed 20 listings ended");
  expect(await judged(broken)).toMatchObject({ status: "ready", version: 2 });

  await signIn(page, account.email);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/orders/${delivered.id}`);
  const table = page.getByTestId("table-row").filter({ hasText: "prices" });
  await table.getByText(/^Version history \(2 versions\)/).click();
  const released = table.getByTestId("version-row").nth(0);
  await expect(released.getByTestId("quality-reason")).toHaveText(
    "Held, then released: Seller confirmed 20 listings ended",
  );
  await released.getByText("Quality report").click();
  await expect(released.getByTestId("quality-rows")).toHaveText("30 (previous 50, −40.0%)");
  await expect(
    released
      .getByTestId("quality-check")
      .filter({ hasText: "Rows lost since the previous version" })
      .getByRole("definition"),
  ).toHaveText([
    "Rows lost since the previous version",
    "whole table",
    "40.0% fewer rows",
    "over 20.0% fewer",
    "Holds the version",
    "Held",
  ]);
  await expect(table.getByTestId("version-chart").getByRole("img")).toHaveAccessibleName(
    /^Rows and changes of prices over versions 1 to 2: 50 rows at version 1, 30 at version 2/,
  );
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await expectNoAxeViolations(page, "order page at phone width, a released version's report open");
});
