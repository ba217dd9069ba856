import { createHash, randomInt } from "node:crypto";
import { crc32 } from "node:zlib";

/**
 * API key secrets: `dak_` + 32 random base62 characters (190 bits) + a 6-character base62
 * CRC-32 of those characters. The fixed prefix lets secret scanners find leaked keys; the
 * checksum lets us refuse typos and random strings without touching the database.
 */
export const SECRET_PREFIX = "dak_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const SECRET_PATTERN = new RegExp(`^${SECRET_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

export function generateSecret(): string {
  let body = "";
  for (let i = 0; i < BODY_LENGTH; i++) body += ALPHABET[randomInt(ALPHABET.length)];
  return SECRET_PREFIX + body + checksumOf(body);
}

/** Well-formed and its checksum matches. */
export function isWellFormedSecret(secret: string): boolean {
  if (!SECRET_PATTERN.test(secret)) return false;
  const body = secret.slice(SECRET_PREFIX.length, SECRET_PREFIX.length + BODY_LENGTH);
  return secret.slice(-CHECKSUM_LENGTH) === checksumOf(body);
}

/** Secrets carry 190 random bits, so a plain SHA-256 is a safe, fast, indexable digest. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** What the dashboard shows to recognise a key without revealing it. */
export function secretDisplayParts(secret: string): { prefix: string; last4: string } {
  return { prefix: secret.slice(0, SECRET_PREFIX.length + 4), last4: secret.slice(-4) };
}

function checksumOf(body: string): string {
  let value = crc32(body);
  let encoded = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    encoded = ALPHABET[value % ALPHABET.length] + encoded;
    value = Math.floor(value / ALPHABET.length);
  }
  return encoded;
}
