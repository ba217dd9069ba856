import { createCipheriv, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openSecrets, redactSecrets, resealSecrets, sealSecrets, secretsKeyRing } from "./secrets";

const key = () => randomBytes(32).toString("base64");
const secrets = { secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const BOUND = "exd_00000000000000000000000000000001\ns3 https://s3.example.com";

/** A value as sealed before secrets were bound to their destination (v1: no additional data). */
function sealedUnbound(ring: ReturnType<typeof secretsKeyRing>): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", ring[0]!.key, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(secrets), "utf8"), cipher.final()]);
  return ["v1", ring[0]!.id, iv, cipher.getAuthTag(), data]
    .map((part) => (typeof part === "string" ? part : part.toString("base64url")))
    .join(".");
}

describe("destination secrets (AES-256-GCM under EXPORT_SECRETS_KEY)", () => {
  it("seal with the first key and open with any key of the ring: a rotation reseals, then the old key can go", () => {
    const [oldKey, newKey] = [key(), key()];
    const before = secretsKeyRing({ EXPORT_SECRETS_KEY: oldKey });
    const sealed = sealSecrets(secrets, BOUND, before);
    expect(sealed).not.toContain(secrets.secret_access_key);
    expect(openSecrets(sealed, BOUND, before)).toEqual(secrets);

    // Rotation step 1: the new key first, the old one still there.
    const during = secretsKeyRing({ EXPORT_SECRETS_KEY: `${newKey},${oldKey}` });
    expect(openSecrets(sealed, BOUND, during)).toEqual(secrets);
    const resealed = resealSecrets(sealed, BOUND, during)!;
    expect(resealed).not.toBe(sealed);
    expect(resealSecrets(resealed, BOUND, during)).toBeNull(); // already under the first key

    // Step 2: the old key removed; what was resealed still opens, what was not is refused by name.
    const after = secretsKeyRing({ EXPORT_SECRETS_KEY: newKey });
    expect(openSecrets(resealed, BOUND, after)).toEqual(secrets);
    expect(() => openSecrets(sealed, BOUND, after)).toThrow(/sealed with a key that is not in EXPORT_SECRETS_KEY/);
  });

  it("refuse a tampered value", () => {
    const ring = secretsKeyRing({ EXPORT_SECRETS_KEY: key() });
    const sealed = sealSecrets(secrets, BOUND, ring);
    const parts = sealed.split(".");
    const data = Buffer.from(parts[4]!, "base64url");
    data[0] = data[0]! ^ 1;
    parts[4] = data.toString("base64url");
    expect(() => openSecrets(parts.join("."), BOUND, ring)).toThrow();
  });

  it("open only for the destination and address they were sealed for (issue #37)", () => {
    const ring = secretsKeyRing({ EXPORT_SECRETS_KEY: key() });
    const sealed = sealSecrets(secrets, BOUND, ring);
    expect(openSecrets(sealed, BOUND, ring)).toEqual(secrets);
    const otherRow = BOUND.replace("0001", "0002");
    const otherHost = BOUND.replace("s3.example.com", "attacker.example");
    for (const boundTo of [otherRow, otherHost]) {
      expect(() => openSecrets(sealed, boundTo, ring)).toThrow(
        /do not open for this destination.*enter the secrets again/,
      );
    }
  });

  it("open a value sealed before the binding (v1), and reseal it bound", () => {
    const ring = secretsKeyRing({ EXPORT_SECRETS_KEY: key() });
    const legacy = sealedUnbound(ring);
    expect(openSecrets(legacy, BOUND, ring)).toEqual(secrets);
    const resealed = resealSecrets(legacy, BOUND, ring)!;
    expect(resealed.startsWith("v2.")).toBe(true);
    expect(openSecrets(resealed, BOUND, ring)).toEqual(secrets);
    expect(() => openSecrets(resealed, BOUND.replace("0001", "0002"), ring)).toThrow(/do not open/);
    expect(resealSecrets(resealed, BOUND, ring)).toBeNull();
  });

  it("refuse production without EXPORT_SECRETS_KEY, and a key that is not 32 bytes of base64, naming the setting", () => {
    expect(() => secretsKeyRing({ NODE_ENV: "production" })).toThrow(/EXPORT_SECRETS_KEY in production/);
    expect(() => secretsKeyRing({ EXPORT_SECRETS_KEY: randomBytes(16).toString("base64") })).toThrow(
      /EXPORT_SECRETS_KEY: key 1 is not a base64 32-byte key/,
    );
    expect(() => secretsKeyRing({ EXPORT_SECRETS_KEY: `${key()},not base64!` })).toThrow(/key 2/);
    // Outside production, without the setting: one key derived from AUTH_SECRET (documented fallback).
    const derived = secretsKeyRing({ NODE_ENV: "development", AUTH_SECRET: "x".repeat(40) });
    expect(derived).toHaveLength(1);
    expect(openSecrets(sealSecrets(secrets, BOUND, derived), BOUND, derived)).toEqual(secrets);
  });

  it("redact every secret, raw and URL-encoded, from what a store answers", () => {
    const text = `denied for wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (wJalrXUtnFEMI%2FK7MDENG%2FbPxRfiCYEXAMPLEKEY)`;
    expect(redactSecrets(text, [secrets.secret_access_key])).toBe("denied for [redacted] ([redacted])");
  });
});
