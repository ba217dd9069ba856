import path from "node:path";
import { Readable } from "node:stream";
import { createBuyer } from "../lib/buyers";
import { db } from "../lib/db/client";
import { DEMO_EMAIL } from "../lib/docs/examples";
import { closeEnginePool } from "../lib/engine/engine-pool";
import { addOrderFile, createOrder } from "../lib/operator/orders";
import { processPendingNow } from "../lib/tables/pipeline";
import { describeTable, setCadence } from "../lib/tables/dictionary";
import { publishTable } from "../lib/tables/publish";
import type { OrderStatus } from "../lib/schemas/order-status";
import { enableSocialAccess, importSocialProfiles } from "../lib/social/admin";

type DemoOrder = { name: string; status: OrderStatus; daysAgo: number; files: { name: string; content: string }[] };

const DAY = 24 * 60 * 60 * 1000;

function csv(header: string, rows: number, row: (i: number) => string): string {
  return [header, ...Array.from({ length: rows }, (_, i) => row(i + 1))].join("\n") + "\n";
}

const DEMO_ORDERS: DemoOrder[] = [
  {
    name: "E-commerce product prices, Q3 2026",
    status: "delivered",
    daysAgo: 20,
    files: [
      {
        name: "products.csv",
        content: csv(
          "sku,title,price_eur,in_stock",
          500,
          (i) => `SKU-${1000 + i},Product ${i},${(i * 1.37).toFixed(2)},${i % 7 !== 0}`,
        ),
      },
      {
        // Named for what it holds: a file's table takes its name (product_reviews, not products_2).
        name: "product-reviews.jsonl",
        content:
          Array.from({ length: 200 }, (_, i) =>
            JSON.stringify({ sku: `SKU-${1001 + i}`, reviews: (i * 13) % 97 }),
          ).join("\n") + "\n",
      },
    ],
  },
  {
    name: "Berlin rental listings, October 2026",
    status: "refunded",
    daysAgo: 12,
    files: [
      {
        name: "rental-listings.csv",
        content: csv("id,district,rooms,rent_eur", 300, (i) => `${i},Mitte,${(i % 4) + 1},${900 + i * 3}`),
      },
    ],
  },
  { name: "Weekly job postings, DACH", status: "unfinished", daysAgo: 2, files: [] },
];

/** The demo's refreshed table: a weekly price list, keyed by sku, three versions apart. */
const PRICES_TABLE = "weekly_prices";
const PRICE_WEEKS = 3;

function weeklyPrices(week: number): string {
  // Each week a few prices move, a product is dropped and new ones are listed.
  const rows = [];
  for (let i = 1; i <= 60 + week * 5; i++) {
    if (week >= 2 && i % 17 === 0) continue;
    const moved = week >= 2 && i % 9 === week;
    rows.push(`SKU-${1000 + i},Product ${i},${(i * 1.37 + (moved ? week : 0)).toFixed(2)},${i % 13 !== week}`);
  }
  return `sku,title,price_eur,in_stock\n${rows.join("\n")}\n`;
}

/** When the price list's version was made: version 1 with the order's delivery, then one a week. */
function priceWeekDate(deliveredAt: Date, version: number): Date {
  return new Date(deliveredAt.getTime() + (version - 1) * 7 * DAY);
}

/** Publishes the three weeks of the demo's price list to its delivered order, one version each. */
async function publishRefreshedTable(buyerId: string): Promise<void> {
  const order = await db().order.findFirstOrThrow({
    where: { buyerId, status: "delivered" },
    select: { id: true, deliveredAt: true },
  });
  for (let week = 1; week <= PRICE_WEEKS; week++) {
    const day = priceWeekDate(order.deliveredAt!, week).toISOString().slice(0, 10);
    await publishTable({
      orderId: order.id,
      table: PRICES_TABLE,
      key: week === 1 ? ["sku"] : undefined,
      parts: [
        { name: `weekly-prices-${day}.csv`, source: { stream: Readable.from([Buffer.from(weeklyPrices(week))]) } },
      ],
    });
  }
}

/**
 * Dates every version of the demo like its files: the delivered files' tables as made on delivery, the price
 * list's versions a week apart from it, each change file with its version.
 */
async function dateVersions(buyerId: string): Promise<void> {
  const versions = await db().tableVersion.findMany({
    where: { table: { order: { buyerId } } },
    select: {
      tableId: true,
      version: true,
      publicationId: true,
      changeFileId: true,
      table: { select: { name: true, order: { select: { deliveredAt: true, paidAt: true } } } },
    },
  });
  for (const { tableId, version, publicationId, changeFileId, table } of versions) {
    const deliveredAt = table.order.deliveredAt ?? new Date(table.order.paidAt.getTime() + DAY);
    const at = table.name === PRICES_TABLE ? priceWeekDate(deliveredAt, version) : deliveredAt;
    await db().tableVersion.update({ where: { tableId_version: { tableId, version } }, data: { createdAt: at } });
    await db().tablePublication.update({ where: { id: publicationId }, data: { createdAt: at, finishedAt: at } });
    await db().orderFile.updateMany({
      where: { OR: [{ publicationId }, ...(changeFileId ? [{ id: changeFileId }] : [])] },
      data: { createdAt: at },
    });
  }
}

/** The price list's data dictionary and its weekly cadence, so the demo shows what a table promises. */
async function describeRefreshedTable(buyerId: string): Promise<void> {
  const order = await db().order.findFirstOrThrow({ where: { buyerId, status: "delivered" }, select: { id: true } });
  await describeTable(order.id, PRICES_TABLE, {
    description: "The shop's price list, scraped every week: one row per product on sale that week.",
    columns: [
      {
        name: "sku",
        description: "The shop's stock-keeping unit: the same product keeps it every week.",
        example: "SKU-1001",
      },
      { name: "title", description: "The product's name as the shop lists it." },
      { name: "price_eur", description: "The listed price, VAT included.", unit: "EUR", example: "1.37" },
      { name: "in_stock", description: "Whether the shop showed the product as available." },
    ],
  });
  await setCadence(order.id, PRICES_TABLE, { every: "7d" });
}

/**
 * Loads the demo: one buyer (demo@example.com) with a delivered, a refunded and an unfinished
 * order carrying small real files (each data file a table of its own, plus a weekly price list
 * refreshed as three versions, with their change files, described and with a weekly cadence), Social API
 * access and a few profiles.
 * Skipped if the demo buyer already has orders, so it is safe to run twice.
 */
export async function seedDemo(log: (message: string) => void = console.log): Promise<void> {
  const buyer = await createBuyer(DEMO_EMAIL);
  if ((await db().order.count({ where: { buyerId: buyer.id } })) > 0) {
    log(`Demo data already present for ${DEMO_EMAIL}; nothing to do.`);
    return;
  }
  const now = Date.now();
  for (const demo of DEMO_ORDERS) {
    const paidAt = new Date(now - demo.daysAgo * DAY);
    const order = await createOrder({ buyerId: buyer.id, name: demo.name, status: demo.status, now: paidAt });
    for (const file of demo.files) {
      await addOrderFile({ orderId: order.id, name: file.name, source: Readable.from([Buffer.from(file.content)]) });
    }
    // Dated like a real order's life: files delivered a day after payment, a refund a day after that.
    const deliveredAt = new Date(paidAt.getTime() + DAY);
    await db().orderFile.updateMany({ where: { orderId: order.id }, data: { createdAt: deliveredAt } });
    await db().order.update({
      where: { id: order.id },
      data: {
        deliveredAt: demo.status === "delivered" ? deliveredAt : null,
        refundedAt: demo.status === "refunded" ? new Date(deliveredAt.getTime() + DAY) : null,
      },
    });
  }
  await publishRefreshedTable(buyer.id);
  // Profiled, made into Parquet and into versions now, so the demo's previews, renditions, tables and
  // the API reference's examples are there, final, from the first page.
  await processPendingNow();
  await dateVersions(buyer.id);
  await describeRefreshedTable(buyer.id);
  await closeEnginePool();
  await enableSocialAccess(buyer.id, 1000, 30);
  const report = await importSocialProfiles(path.resolve("prisma/seed/social-profiles.ndjson"));
  log(`Demo data loaded: buyer ${DEMO_EMAIL}, ${DEMO_ORDERS.length} orders, ${report.imported} social profiles.`);
}
