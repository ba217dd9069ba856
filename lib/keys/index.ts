import { z } from "zod";
import { db } from "../db/client";
import type { ApiKeyPermission as StoredPermission } from "../db/generated/enums";
import { AppError } from "../errors";
import { generateSecret, hashSecret, secretDisplayParts } from "./secret";

export const API_KEY_PERMISSIONS = ["datasets:read", "scrape:read"] as const;
export type ApiKeyPermission = (typeof API_KEY_PERMISSIONS)[number];
export const API_KEY_EXPIRY_DAYS = [30, 90, 365] as const;

export const apiKeyPermissionSchema = z.enum(API_KEY_PERMISSIONS);
export const apiKeyExpiryDaysSchema = z.literal(API_KEY_EXPIRY_DAYS);

const toStored: Record<ApiKeyPermission, StoredPermission> = {
  "datasets:read": "datasets_read",
  "scrape:read": "scrape_read",
};

export type NewApiKey = { id: string; secret: string; name: string; permission: ApiKeyPermission; expiresAt: Date };

/**
 * Creates a key for a buyer. The secret is returned here and nowhere else: only its hash is stored.
 * `scrape:read` keys exist only while the account's Social API access is enabled.
 */
export async function createApiKey(input: {
  buyerId: string;
  name: string;
  permission: ApiKeyPermission;
  expiresInDays: (typeof API_KEY_EXPIRY_DAYS)[number];
  now?: Date;
}): Promise<NewApiKey> {
  const name = input.name.trim();
  if (!name || name.length > 100) throw new AppError("invalid_argument", "A key needs a name of 1 to 100 characters.");
  if (input.permission === "scrape:read") {
    const access = await db().socialAccess.findUnique({ where: { buyerId: input.buyerId } });
    if (!access?.enabled) {
      throw new AppError(
        "social_access_disabled",
        "A scrape:read key needs Social API access, which is not enabled for this account.",
      );
    }
  }
  const secret = generateSecret();
  const now = input.now ?? new Date();
  const expiresAt = new Date(now.getTime() + input.expiresInDays * 24 * 60 * 60 * 1000);
  const key = await db().apiKey.create({
    data: {
      buyerId: input.buyerId,
      name,
      permission: toStored[input.permission],
      secretHash: hashSecret(secret),
      ...secretDisplayParts(secret),
      createdAt: now,
      expiresAt,
    },
    select: { id: true },
  });
  return { id: key.id, secret, name, permission: input.permission, expiresAt };
}

/** Revokes a key; revoking twice keeps the first revocation time. */
export async function revokeApiKey(id: string, now = new Date()): Promise<{ id: string; revokedAt: Date }> {
  const key = await db().apiKey.findUnique({ where: { id }, select: { revokedAt: true } });
  if (!key) throw new AppError("key_not_found", `No API key with id ${id}.`);
  if (key.revokedAt) return { id, revokedAt: key.revokedAt };
  await db().apiKey.update({ where: { id }, data: { revokedAt: now } });
  return { id, revokedAt: now };
}
