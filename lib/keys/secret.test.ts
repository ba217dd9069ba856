import { describe, expect, it } from "vitest";
import { generateSecret, hashSecret, isWellFormedSecret, SECRET_PREFIX, secretDisplayParts } from "./secret";

describe("API key secrets", () => {
  it("have the fixed prefix, 38 base62 characters and a valid checksum", () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^dak_[0-9A-Za-z]{38}$/);
    expect(isWellFormedSecret(secret)).toBe(true);
  });

  it("are different every time", () => {
    const secrets = new Set(Array.from({ length: 1000 }, generateSecret));
    expect(secrets.size).toBe(1000);
  });

  it.each([
    ["a changed body character", (s: string) => s.slice(0, 10) + (s[10] === "a" ? "b" : "a") + s.slice(11)],
    ["a changed checksum character", (s: string) => s.slice(0, -1) + (s.endsWith("a") ? "b" : "a")],
    ["a missing character", (s: string) => s.slice(0, -1)],
    ["another prefix", (s: string) => "xyz_" + s.slice(SECRET_PREFIX.length)],
    ["surrounding space", (s: string) => ` ${s}`],
  ])("are refused with %s", (_case, mutate) => {
    expect(isWellFormedSecret(mutate(generateSecret()))).toBe(false);
  });

  it("hash to 64 hex characters and show only prefix and last four", () => {
    const secret = generateSecret();
    expect(hashSecret(secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(secretDisplayParts(secret)).toEqual({ prefix: secret.slice(0, 8), last4: secret.slice(-4) });
  });
});
