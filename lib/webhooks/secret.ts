import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { appSecret } from "../secrets";

/**
 * An endpoint's signing secret: `whsec_` + base64 of 24 random bytes (Standard Webhooks' form).
 * The server must sign with it on every delivery, so it cannot be stored as a hash like an API
 * key: it is sealed with AES-256-GCM under a key derived from AUTH_SECRET (HKDF), so a copy of
 * the database alone reveals no secret.
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

const sealingKey = () => Buffer.from(hkdfSync("sha256", appSecret(), "dataset-access", "webhook-secrets", 32));

export function sealSecret(secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", sealingKey(), iv);
  const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), sealed.toString("base64url")].join(
    ".",
  );
}

export function openSecret(sealed: string): string {
  const [version, iv, tag, data] = sealed.split(".");
  if (version !== "v1" || !iv || !tag || !data) throw new Error("not a sealed webhook secret");
  const decipher = createDecipheriv("aes-256-gcm", sealingKey(), Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
}

/** The end of a secret, to recognise it in the dashboard. */
export const secretHint = (secret: string) => `whsec_…${secret.slice(-4)}`;
