import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { createBuyer } from "../../lib/buyers";
import { disconnectDb } from "../../lib/db/client";
import { closeJobQueue } from "../../lib/queue";
import { createApiKey, type ApiKeyPermission } from "../../lib/keys";
import { addOrderFile, createOrder } from "../../lib/operator/orders";
import type { OrderStatus } from "../../lib/schemas/order-status";
import type { TestDatabase } from "./database-server";

/**
 * A migrated database and a storage directory that both this test process (loading fixtures
 * through the domain modules, as the operator CLI does) and the server under test use.
 */
export type TestEnvironment = { database: TestDatabase; storageDir: string; cleanup: () => Promise<void> };

export async function prepareTestEnvironment(database: TestDatabase, prefix: string): Promise<TestEnvironment> {
  const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), `${prefix}-storage-`));
  process.env.DATABASE_URL = database.url;
  process.env.STORAGE_DIR = storageDir;
  return {
    database,
    storageDir,
    cleanup: async () => {
      // Adding a data file queues its profile: the queue's connection goes before the database does.
      await closeJobQueue();
      await disconnectDb();
      await database.drop();
      await fs.rm(storageDir, { recursive: true, force: true });
    },
  };
}

let buyerCounter = 0;

export async function buyer(label: string) {
  return createBuyer(`${label}-${Date.now()}-${++buyerCounter}@example.com`);
}

export async function order(
  buyerId: string,
  options: { name?: string; status?: OrderStatus; paidAt?: Date; files?: Record<string, Buffer> } = {},
) {
  const created = await createOrder({
    buyerId,
    name: options.name ?? "Test order",
    status: options.status ?? "delivered",
    now: options.paidAt,
  });
  const files = [];
  for (const [name, content] of Object.entries(options.files ?? {})) {
    files.push(await addOrderFile({ orderId: created.id, name, source: Readable.from([content]) }));
  }
  return { ...created, files };
}

export async function apiKey(
  buyerId: string,
  options: { permission?: ApiKeyPermission; expiresInDays?: 30 | 90 | 365; createdAt?: Date } = {},
) {
  return createApiKey({
    buyerId,
    name: "test key",
    permission: options.permission ?? "datasets:read",
    expiresInDays: options.expiresInDays ?? 30,
    now: options.createdAt,
  });
}
