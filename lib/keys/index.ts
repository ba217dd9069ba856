import { z } from "zod";
import { CONTROL_CHARACTERS, NAME_MAX_LENGTH } from "../contract";
import { db, type Prisma } from "../db/client";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { API_KEY_PERMISSIONS, permissionFromStored, permissionToStored, type ApiKeyPermission } from "./permissions";
import { socialAccessEnabled } from "../social/access";
import { generateSecret, hashSecret, secretDisplayParts } from "./secret";

export { API_KEY_PERMISSIONS, type ApiKeyPermission } from "./permissions";
export const API_KEY_EXPIRY_DAYS = [30, 90, 365] as const;

export const apiKeyPermissionSchema = z.enum(API_KEY_PERMISSIONS);
export const apiKeyExpiryDaysSchema = z.literal(API_KEY_EXPIRY_DAYS);

export type ApiKeyExpiryDays = (typeof API_KEY_EXPIRY_DAYS)[number];

export type NewApiKey = { id: string; secret: string; name: string; permission: ApiKeyPermission; expiresAt: Date };

/**
 * Creates a key for a buyer. The secret is returned here and nowhere else: only its hash is stored.
 * `scrape:read` keys exist only while the account's Social API access is enabled. `client`: a
 * transaction the key is made in.
 */
export async function createApiKey(
  input: {
    buyerId: string;
    name: string;
    permission: ApiKeyPermission;
    expiresInDays: ApiKeyExpiryDays;
    now?: Date;
  },
  client: Pick<Prisma.TransactionClient, "apiKey"> = db(),
): Promise<NewApiKey> {
  const name = input.name.trim();
  if (!name || name.length > NAME_MAX_LENGTH) {
    throw new AppError("invalid_argument", `A key needs a name of 1 to ${NAME_MAX_LENGTH} characters.`);
  }
  if (CONTROL_CHARACTERS.test(name)) {
    throw new AppError("invalid_argument", "A key name cannot contain control characters.");
  }
  if (input.permission === "scrape:read") {
    if (!(await socialAccessEnabled(input.buyerId))) {
      throw new AppError(
        "social_access_disabled",
        "A scrape:read key needs Social API access, which is not enabled for this account.",
      );
    }
  }
  const secret = generateSecret();
  const now = input.now ?? new Date();
  const expiresAt = new Date(now.getTime() + input.expiresInDays * 24 * 60 * 60 * 1000);
  const key = await client.apiKey.create({
    data: {
      buyerId: input.buyerId,
      name,
      permission: permissionToStored[input.permission],
      secretHash: hashSecret(secret),
      ...secretDisplayParts(secret),
      createdAt: now,
      expiresAt,
    },
    select: { id: true },
  });
  return { id: key.id, secret, name, permission: input.permission, expiresAt };
}

/**
 * Revokes a key; revoking twice keeps the first revocation time. With `buyerId` (the dashboard)
 * only that buyer's key can be revoked: anyone else's is "not found".
 */
export async function revokeApiKey(
  id: string,
  { buyerId, now = new Date() }: { buyerId?: string; now?: Date } = {},
): Promise<{ id: string; revokedAt: Date; name: string; buyerId: string; alreadyRevoked: boolean }> {
  const key = isTypedId("key", id)
    ? await db().apiKey.findFirst({ where: { id, buyerId }, select: { revokedAt: true, name: true, buyerId: true } })
    : null;
  if (!key) throw new AppError("key_not_found", `No API key with id ${id}.`);
  const found = { id, name: key.name, buyerId: key.buyerId };
  if (key.revokedAt) return { ...found, revokedAt: key.revokedAt, alreadyRevoked: true };
  await db().apiKey.update({ where: { id }, data: { revokedAt: now } });
  return { ...found, revokedAt: now, alreadyRevoked: false };
}

/** How long a replaced key keeps working beside its replacement. */
export const REPLACE_OVERLAPS = { none: 0, "1h": 3_600_000, "24h": 86_400_000, "7d": 604_800_000 } as const;
export type ReplaceOverlap = keyof typeof REPLACE_OVERLAPS;
export const replaceOverlapSchema = z.enum(Object.keys(REPLACE_OVERLAPS) as [ReplaceOverlap, ...ReplaceOverlap[]], {
  error: "The overlap is none, 1h, 24h or 7d.",
});

/**
 * A new key with the name and permission of one of the buyer's keys. The old key keeps working
 * for `overlap` and retires then (refused from that instant, recorded as revoked by the key
 * lifecycle job); with no overlap it is revoked at once. An overlap never extends the old key
 * past its own expiry. A revoked or expired key is left as it is. A key already retiring cannot
 * be replaced again: its retirement only ever comes, never moves later (replace its replacement).
 * The old key is claimed and the new one made in one transaction, so two replaces at once make one key.
 */
export async function replaceApiKey(input: {
  buyerId: string;
  keyId: string;
  expiresInDays: ApiKeyExpiryDays;
  overlap: ReplaceOverlap;
  now?: Date;
}): Promise<NewApiKey & { oldRetiresAt: Date | null }> {
  const now = input.now ?? new Date();
  const old = isTypedId("key", input.keyId)
    ? await db().apiKey.findFirst({
        where: { id: input.keyId, buyerId: input.buyerId },
        select: { name: true, permission: true, revokedAt: true, retiresAt: true, expiresAt: true },
      })
    : null;
  if (!old) throw new AppError("key_not_found", `No API key with id ${input.keyId}.`);
  const replacement = { ...input, now, name: old.name, permission: permissionFromStored[old.permission] };
  // A key that no longer works is left as it is: there is nothing to overlap with.
  const status = apiKeyStatus(old, now);
  if (status === "revoked" || status === "expired") {
    return { ...(await createApiKey(replacement)), oldRetiresAt: null };
  }
  const retiresAt = new Date(now.getTime() + REPLACE_OVERLAPS[input.overlap]);
  return db().$transaction(async (tx) => {
    const { count } = await tx.apiKey.updateMany({
      where: { id: input.keyId, revokedAt: null, retiresAt: null },
      data: input.overlap === "none" ? { revokedAt: now } : { retiresAt },
    });
    if (count === 0) throw alreadyReplaced(old.retiresAt);
    const created = await createApiKey(replacement, tx);
    return { ...created, oldRetiresAt: retiresAt < old.expiresAt ? retiresAt : old.expiresAt };
  });
}

function alreadyReplaced(retiresAt: Date | null): AppError {
  const when = retiresAt ? ` and retires at ${retiresAt.toISOString()}` : "";
  return new AppError(
    "invalid_argument",
    `This key has already been replaced${when}: replace its replacement instead (a retiring key is never extended).`,
  );
}

export type ApiKeyStatus = "active" | "expires_soon" | "expired" | "revoked";
/** A key within this many days of its expiry is flagged in the dashboard. */
export const EXPIRES_SOON_DAYS = 7;

export function apiKeyStatus(
  key: { expiresAt: Date; revokedAt: Date | null; retiresAt?: Date | null },
  now = new Date(),
): ApiKeyStatus {
  if (key.revokedAt || (key.retiresAt && key.retiresAt <= now)) return "revoked";
  const left = key.expiresAt.getTime() - now.getTime();
  if (left <= 0) return "expired";
  return left <= EXPIRES_SOON_DAYS * 24 * 60 * 60 * 1000 ? "expires_soon" : "active";
}

export type ApiKeySummary = {
  id: string;
  name: string;
  permission: ApiKeyPermission;
  /** e.g. `dak_Ab3x…9fQz`: enough to recognise a key, useless to use it. */
  display: string;
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** A replaced key's retirement (the end of its overlap), while it is still ahead. */
  retiresAt: Date | null;
  status: ApiKeyStatus;
};

/** The buyer's keys, newest first, without anything secret. */
export async function listApiKeys(buyerId: string, now = new Date()): Promise<ApiKeySummary[]> {
  const keys = await db().apiKey.findMany({
    where: { buyerId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    select: {
      id: true,
      name: true,
      permission: true,
      prefix: true,
      last4: true,
      createdAt: true,
      expiresAt: true,
      lastUsedAt: true,
      revokedAt: true,
      retiresAt: true,
    },
  });
  return keys.map(({ prefix, last4, permission, ...key }) => ({
    ...key,
    revokedAt: key.revokedAt ?? (key.retiresAt && key.retiresAt <= now ? key.retiresAt : null),
    retiresAt: key.retiresAt && key.retiresAt > now && !key.revokedAt ? key.retiresAt : null,
    permission: permissionFromStored[permission],
    display: `${prefix}…${last4}`,
    status: apiKeyStatus(key, now),
  }));
}
