import path from "node:path";
import { Readable } from "node:stream";
import { createBuyer } from "../lib/buyers";
import { db } from "../lib/db/client";
import { DEMO_EMAIL } from "../lib/docs/examples";
import { closeDatasetEngine } from "../lib/datasets/engine";
import { profileStoredFile } from "../lib/datasets/profile";
import { makeRendition } from "../lib/datasets/renditions";
import { addOrderFile, createOrder } from "../lib/orders/admin";
import type { OrderStatus } from "../lib/orders/status";
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
        name: "products.jsonl",
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
        name: "listings.csv",
        content: csv("id,district,rooms,rent_eur", 300, (i) => `${i},Mitte,${(i % 4) + 1},${900 + i * 3}`),
      },
    ],
  },
  { name: "Weekly job postings, DACH", status: "unfinished", daysAgo: 2, files: [] },
];

/**
 * Loads the demo: one buyer (demo@example.com) with a delivered, a refunded and an unfinished
 * order carrying small real files, Social API access and a few profiles. Skipped if the demo
 * buyer already has orders, so it is safe to run twice.
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
  // Profiled and made into Parquet now, so the demo's previews, renditions and the API reference's
  // examples are there, final, from the first page.
  const files = await db().orderFile.findMany({ where: { order: { buyerId: buyer.id } }, select: { id: true } });
  for (const file of files) {
    if ((await profileStoredFile(file.id, { queueRendition: false })) === "ready")
      await makeRendition(file.id, "parquet");
  }
  await closeDatasetEngine();
  await enableSocialAccess(buyer.id, 1000, 30);
  const report = await importSocialProfiles(path.resolve("prisma/seed/social-profiles.ndjson"));
  log(`Demo data loaded: buyer ${DEMO_EMAIL}, ${DEMO_ORDERS.length} orders, ${report.imported} social profiles.`);
}
