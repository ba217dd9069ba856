import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { AppError } from "../errors";
import { appSecret } from "../secrets";

/**
 * A destination's secrets (an access key, an account key or SAS token, an SSH key or password)
 * must be used on every run, so they are stored sealed with AES-256-GCM, never as hashes, and never
 * shown again. The key ring is EXPORT_SECRETS_KEY: base64 32-byte keys separated by commas; the
 * first seals, every one opens, so a key is rotated by putting the new one first, resealing
 * (`resealSecrets`, done by every run and test of a destination) and then dropping the old one.
 *
 * Each sealed value is bound to its destination: the destination's id and the address its secret
 * goes to (`secretBinding` in ./secret-address) are the cipher's additional data, so a value copied
 * to another row, or left in a row whose endpoint, account URL or host was changed underneath it,
 * does not open. Values sealed before this binding (`v1`, no additional data) still open and are
 * sealed again bound (`v2`) the first time a run or test opens them.
 *
 * Production (NODE_ENV=production) refuses to seal or open without EXPORT_SECRETS_KEY. Elsewhere
 * (development, tests) one key is derived from AUTH_SECRET (HKDF), as the webhooks' signing
 * secrets are, so `npm run dev` needs nothing more; a secret sealed so opens only there.
 */

export const EXPORT_SECRETS_KEY = "EXPORT_SECRETS_KEY";

type Env = Record<string, string | undefined>;
type RingKey = { id: string; key: Buffer };

/** A key's id in a sealed value: the first 8 hex characters of its SHA-256 (tells which key opens it). */
const keyId = (key: Buffer) => createHash("sha256").update(key).digest("hex").slice(0, 8);

/** The key ring in force: EXPORT_SECRETS_KEY's keys, first one first; refused when malformed or, in production, missing. */
export function secretsKeyRing(env: Env = process.env): RingKey[] {
  const configured = env[EXPORT_SECRETS_KEY]?.trim();
  if (!configured) {
    if (env.NODE_ENV === "production") {
      throw new AppError(
        "export_not_configured",
        `Exports need ${EXPORT_SECRETS_KEY} in production: one or more base64 32-byte keys separated by commas ` +
          "(e.g. `openssl rand -base64 32`). Destinations cannot be created or run without it.",
      );
    }
    const derived = Buffer.from(
      hkdfSync("sha256", appSecret(env as NodeJS.ProcessEnv), "dataset-access", "export-secrets", 32),
    );
    return [{ id: keyId(derived), key: derived }];
  }
  return configured.split(",").map((text, index) => {
    const key = Buffer.from(text.trim(), "base64");
    if (key.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text.trim())) {
      throw new AppError(
        "export_not_configured",
        `${EXPORT_SECRETS_KEY}: key ${index + 1} is not a base64 32-byte key (e.g. \`openssl rand -base64 32\`).`,
      );
    }
    return { id: keyId(key), key };
  });
}

/** The sealed form bound to its destination (`boundTo` is the cipher's additional data); v1 had none. */
const SEALED_VERSION = "v2";
const LEGACY_VERSION = "v1";

/** Seals `secrets` (a JSON object) under the ring's first key, bound to `boundTo`: `v2.<key id>.<iv>.<tag>.<data>`. */
export function sealSecrets(secrets: Record<string, string>, boundTo: string, ring = secretsKeyRing()): string {
  const [current] = ring;
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", current!.key, iv);
  cipher.setAAD(Buffer.from(boundTo, "utf8"));
  const sealed = Buffer.concat([cipher.update(JSON.stringify(secrets), "utf8"), cipher.final()]);
  return [SEALED_VERSION, current!.id, iv, cipher.getAuthTag(), sealed]
    .map((part) => (typeof part === "string" ? part : part.toString("base64url")))
    .join(".");
}

/**
 * Opens sealed secrets with whichever key of the ring sealed them, if they are bound to `boundTo`
 * (a legacy v1 value is bound to nothing). A value no key opens, or bound elsewhere, is an error
 * that says what to do.
 */
export function openSecrets(sealed: string, boundTo: string, ring = secretsKeyRing()): Record<string, string> {
  const [version, id, iv, tag, data] = sealed.split(".");
  const key = ring.find((candidate) => candidate.id === id);
  if ((version !== SEALED_VERSION && version !== LEGACY_VERSION) || !iv || !tag || !data || !key) {
    throw new AppError(
      "export_not_configured",
      `The destination's secrets were sealed with a key that is not in ${EXPORT_SECRETS_KEY}: add that key back, or enter the secrets again.`,
    );
  }
  const decipher = createDecipheriv("aes-256-gcm", key.key, Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  if (version === SEALED_VERSION) decipher.setAAD(Buffer.from(boundTo, "utf8"));
  let text: string;
  try {
    text = Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
  } catch {
    throw new AppError(
      "export_not_configured",
      "The destination's secrets do not open for this destination and address (they were sealed for another one, or changed): enter the secrets again.",
    );
  }
  return JSON.parse(text) as Record<string, string>;
}

/** The same secrets sealed under the ring's first key and bound to `boundTo`, or null when they already are. */
export function resealSecrets(sealed: string, boundTo: string, ring = secretsKeyRing()): string | null {
  const [version, id] = sealed.split(".");
  if (version === SEALED_VERSION && id === ring[0]!.id) return null;
  return sealSecrets(openSecrets(sealed, boundTo, ring), boundTo, ring);
}

/**
 * `text` with every secret value (and any long enough part of one) replaced by [redacted]: what a
 * store answers may echo what it was sent, and no secret may reach a log line, an error or a run.
 */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  let redacted = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    redacted = redacted.split(secret).join("[redacted]");
    // Keys often travel URL-encoded or in base64 pieces; hide the encoded form too.
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) redacted = redacted.split(encoded).join("[redacted]");
  }
  return redacted;
}
