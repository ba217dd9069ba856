import { describe, expect, it } from "vitest";
import { apiKeyStatus } from "./index";

const now = new Date("2026-11-22T12:00:00Z");
const inDays = (days: number) => new Date(now.getTime() + days * 86_400_000);

describe("apiKeyStatus", () => {
  it.each([
    { expiresAt: inDays(90), revokedAt: null, status: "active" },
    { expiresAt: inDays(7.01), revokedAt: null, status: "active" },
    { expiresAt: inDays(7), revokedAt: null, status: "expires_soon" },
    { expiresAt: inDays(0.001), revokedAt: null, status: "expires_soon" },
    { expiresAt: now, revokedAt: null, status: "expired" },
    { expiresAt: inDays(-1), revokedAt: null, status: "expired" },
    { expiresAt: inDays(90), revokedAt: inDays(-1), status: "revoked" },
    { expiresAt: inDays(-1), revokedAt: inDays(-2), status: "revoked" },
  ])("$status for expiry $expiresAt, revoked $revokedAt", ({ expiresAt, revokedAt, status }) => {
    expect(apiKeyStatus({ expiresAt, revokedAt }, now)).toBe(status);
  });
});
