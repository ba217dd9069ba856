import { timingSafeEqual } from "node:crypto";
import { sqlQuery } from "../db/client";
import { AppError } from "../errors";
import { hashSecret, isWellFormedSecret } from "./secret";
import type { ApiKeyPermission } from "./permissions";
import { LAST_USED_RESOLUTION_MS, noteKeyUse } from "./last-used";

type KeyRow = {
  id: string;
  buyerId: string;
  /** The database enum's own labels are the API's: `datasets:read`, `scrape:read`. */
  permission: ApiKeyPermission;
  secretHash: string;
  expiresAt: Date;
  revokedAt: Date | null;
  retiresAt: Date | null;
  lastUsedAt: Date | null;
};

export type AuthenticatedKey = { keyId: string; buyerId: string; permission: ApiKeyPermission };

/**
 * Checks an Authorization header, in this order: well-formed Bearer header, key format and
 * checksum (no database work for garbage), one lookup by the hash's unique index, revocation (any
 * revocation time), expiry. Nothing is cached, so a revocation or expiry applies to the very next request.
 */
export async function authenticateApiKey(authorization: string | null, now = new Date()): Promise<AuthenticatedKey> {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? "");
  if (!match?.[1]) {
    throw new AppError(
      "missing_api_key",
      "Send your API key in the Authorization header: `Authorization: Bearer <API_KEY>`.",
    );
  }
  const secret = match[1];
  if (!isWellFormedSecret(secret)) throw invalidKey();

  const secretHash = hashSecret(secret);
  // Every API request runs this: one statement on the unique index of secret_hash.
  const [key] = await sqlQuery<KeyRow>(
    `SELECT id, buyer_id AS "buyerId", permission, secret_hash AS "secretHash", expires_at AS "expiresAt",
            revoked_at AS "revokedAt", retires_at AS "retiresAt", last_used_at AS "lastUsedAt"
     FROM api_keys WHERE secret_hash = $1`,
    [secretHash],
  );
  // The lookup is by the digest of a 190-bit secret; the comparison is constant-time all the same.
  if (!key || !timingSafeEqual(Buffer.from(key.secretHash), Buffer.from(secretHash))) throw invalidKey();
  // Any revocation time means revoked: never compared with the clock, so a zone or clock skew
  // between writer and reader (e.g. PgBouncer dropping the TimeZone startup option) cannot delay it.
  if (key.revokedAt) {
    throw new AppError("revoked_api_key", "This API key has been revoked. Create a new key in the dashboard.");
  }
  // A replaced key retires when its overlap ends: from that instant on, like a revoked one.
  if (key.retiresAt && key.retiresAt <= now) {
    throw new AppError(
      "revoked_api_key",
      `This API key was replaced and retired at ${key.retiresAt.toISOString()}. Use its replacement.`,
    );
  }
  if (key.expiresAt <= now) {
    throw new AppError(
      "expired_api_key",
      `This API key expired at ${key.expiresAt.toISOString()}. Create a replacement key in the dashboard.`,
    );
  }
  if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
    noteKeyUse(key.id, now);
  }
  return { keyId: key.id, buyerId: key.buyerId, permission: key.permission };
}

function invalidKey(): AppError {
  return new AppError("invalid_api_key", "The API key is not valid. Check that it was copied whole.");
}
