import { timingSafeEqual } from "node:crypto";
import type { QueryResultRow } from "pg";
import { sqlQuery } from "../db/client";
import { AppError, type ErrorCode } from "../errors";
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

/** A key as sent, checked for form only: its digest, and what this process knows of it. */
export type PresentedKey = {
  secretHash: string;
  /** The key's owner and permission, if this process accepted the key before (they never change). */
  known?: AuthenticatedKey;
};

const KEY_COLUMNS = `id, buyer_id AS "buyerId", permission, secret_hash AS "secretHash", expires_at AS "expiresAt",
  revoked_at AS "revokedAt", retires_at AS "retiresAt", last_used_at AS "lastUsedAt"`;

/**
 * Owner and permission of keys this process accepted, by digest: never whether a key is still
 * valid, which every request reads from the database. It lets a request be rate limited before
 * its one statement, which then reads the key and the data together (queryWithKey). Bounded;
 * a key refused once is forgotten.
 */
const knownKeys = new Map<string, AuthenticatedKey>();
const MAX_KNOWN_KEYS = 20_000;

function remember(secretHash: string, key: AuthenticatedKey): void {
  if (knownKeys.has(secretHash)) return;
  if (knownKeys.size >= MAX_KNOWN_KEYS) knownKeys.delete(knownKeys.keys().next().value!);
  knownKeys.set(secretHash, key);
}

/**
 * Reads the Authorization header, in this order: well-formed Bearer header, then key format and
 * checksum (no database work for garbage).
 */
export function presentedKey(authorization: string | null): PresentedKey {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? "");
  if (!match?.[1]) {
    throw new AppError(
      "missing_api_key",
      "Send your API key in the Authorization header: `Authorization: Bearer <API_KEY>`.",
    );
  }
  if (SHARE_LINK_TOKEN.test(match[1])) throw shareTokenAsKey();
  if (!isWellFormedSecret(match[1])) throw invalidKey();
  const secretHash = hashSecret(match[1]);
  return { secretHash, known: knownKeys.get(secretHash) };
}

/**
 * Checks a presented key in the database: one lookup by the hash's unique index, then revocation
 * (any revocation time), retirement, expiry. Nothing about validity is cached, so a revocation or
 * expiry applies to the very next request on every instance.
 */
export async function verifyKey(presented: PresentedKey, now = new Date()): Promise<AuthenticatedKey> {
  const [row] = await sqlQuery<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE secret_hash = $1`, [
    presented.secretHash,
  ]);
  return acceptKeyRow(presented, row, now);
}

/** The header checks and the database checks of `verifyKey`, for callers that need nothing else. */
export async function authenticateApiKey(authorization: string | null, now = new Date()): Promise<AuthenticatedKey> {
  return verifyKey(presentedKey(authorization), now);
}

/**
 * Runs `text` (a read of `known.buyerId`'s data) in the same statement as the lookup of a key this
 * process knows, then checks the key as `verifyKey` does: one round trip instead of two. The rows
 * are returned only when the key is still valid and still its owner's; otherwise they are dropped
 * and the key's refusal thrown. Parameters of `text` are $1..$n; the key's digest is appended.
 */
export async function queryWithKey<Row extends QueryResultRow>(
  presented: PresentedKey & { known: AuthenticatedKey },
  text: string,
  values: unknown[],
  now = new Date(),
): Promise<Row[]> {
  const keyColumns = ["id", "buyerId", "permission", "secretHash", "expiresAt", "revokedAt", "retiresAt", "lastUsedAt"];
  // The key's columns under names no read uses ("key:…"); "key:row" marks a row of the read.
  const rows = await sqlQuery<Record<string, unknown>>(
    `SELECT ${keyColumns.map((column) => `k."${column}" AS "key:${column}"`).join(", ")}, q.*
     FROM (SELECT ${KEY_COLUMNS} FROM api_keys WHERE secret_hash = $${values.length + 1}) k
     LEFT JOIN (SELECT true AS "key:row", r.* FROM (${text}) r) q ON true`,
    [...values, presented.secretHash],
  );
  const first = rows[0];
  const keyRow = first && (Object.fromEntries(keyColumns.map((column) => [column, first[`key:${column}`]])) as KeyRow);
  const key = acceptKeyRow(presented, keyRow, now);
  if (key.buyerId !== presented.known.buyerId) {
    // Owners never change; a different one means this process's note is wrong: refuse, forget it.
    knownKeys.delete(presented.secretHash);
    throw invalidKey();
  }
  return rows
    .filter((row) => row["key:row"] === true)
    .map((row) => Object.fromEntries(Object.entries(row).filter(([name]) => !name.startsWith("key:"))) as Row);
}

function acceptKeyRow(presented: PresentedKey, key: KeyRow | undefined, now: Date): AuthenticatedKey {
  try {
    return checkKeyRow(presented.secretHash, key, now);
  } catch (error) {
    knownKeys.delete(presented.secretHash);
    throw error;
  }
}

function checkKeyRow(secretHash: string, key: KeyRow | undefined, now: Date): AuthenticatedKey {
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
  const accepted = { keyId: key.id, buyerId: key.buyerId, permission: key.permission };
  remember(secretHash, accepted);
  return accepted;
}

/** A refusal of the key itself (invalid, expired, revoked or retired): the API's 401s after the header's. */
export function isKeyRefusal(error: unknown): boolean {
  return error instanceof AppError && KEY_REFUSALS.has(error.code);
}
const KEY_REFUSALS = new Set<ErrorCode>(["invalid_api_key", "expired_api_key", "revoked_api_key"]);

/** A share link's token (lib/share-links: `dsl_` and 43 base64url characters), sent where a key goes. */
const SHARE_LINK_TOKEN = /^dsl_[A-Za-z0-9_-]{43}$/;

function shareTokenAsKey(): AppError {
  return new AppError(
    "invalid_api_key",
    "This is a share link's token (dsl_…), not an API key: it opens its one order in a browser, at /share/<token>. For the API, create an API key in the dashboard.",
  );
}

function invalidKey(): AppError {
  return new AppError("invalid_api_key", "The API key is not valid. Check that it was copied whole.");
}
